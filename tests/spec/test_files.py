"""Files a spec names are looked at before they are read: /dev/zero, a FIFO, a directory, a socket
or a huge file is refused at once with one clear line; nothing hangs and nothing fills memory.

Each check that could hang or eat memory on a regression runs in a child process with a time limit
and a memory limit, so a regression fails the test instead of stalling the suite.
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.errors import SpecError
from toolkit.spec.files import read_small_file

REPO = Path(__file__).resolve().parents[2]
# ECDSA, since Alibaba's ImportKeyPair takes no ed25519 key.
KEY = (Path(__file__).resolve().parents[1] / "providers" / "specs" / "test_ecdsa.pub").read_text()
GUARD_SECONDS = 20
GUARD_MEMORY = 1536 * 1024 * 1024  # far more than gpuctl needs, far less than reading /dev/zero takes


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GUARD_MEMORY, GUARD_MEMORY))


def guarded(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter with a time and memory limit; a hang fails, not stalls."""
    try:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=GUARD_SECONDS,
            preexec_fn=_limit_memory,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not return within {GUARD_SECONDS}s: it blocks on this path")


READ = """
import sys
from toolkit.errors import SpecError
from toolkit.spec.files import read_small_file
try:
    data = read_small_file(sys.argv[1], limit=int(sys.argv[2]), what="cluster spec")
except SpecError as error:
    print("refused:", str(error))
else:
    print("read:", len(data))
"""


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield path
    server.close()


def test_dev_zero_is_refused_not_read() -> None:
    result = guarded(READ, "/dev/zero", "1000000")
    assert result.stdout == (
        "refused: /dev/zero: is a character device, not a regular file; give the path of a cluster spec\n"
    )


def test_a_fifo_is_refused_without_waiting_for_a_writer(fifo: Path) -> None:
    result = guarded(READ, str(fifo), "1000000")
    assert result.stdout == (
        f"refused: {fifo}: is a named pipe (FIFO), not a regular file; give the path of a cluster spec\n"
    )


def test_a_symlink_to_dev_zero_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "spec.yaml"
    link.symlink_to("/dev/zero")
    result = guarded(READ, str(link), "1000000")
    assert result.stdout == (
        f"refused: {link}: is a character device, not a regular file; give the path of a cluster spec\n"
    )


def test_a_socket_and_a_directory_are_refused(tmp_path: Path, unix_socket: Path) -> None:
    with pytest.raises(SpecError) as caught:
        read_small_file(unix_socket, limit=100, what="cluster spec")
    assert caught.value.problems == [
        f"{unix_socket}: is a socket, not a regular file; give the path of a cluster spec"
    ]
    with pytest.raises(SpecError) as caught:
        read_small_file(tmp_path, limit=100, what="cluster spec")
    assert caught.value.problems == [f"{tmp_path}: is a directory, not a regular file; give the path of a cluster spec"]


def test_a_huge_file_is_refused_by_its_size_before_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as handle:
        handle.truncate(5 * 1024**3)  # 5 GiB, sparse: no disk used; reading it would pass the memory limit
    result = guarded(READ, str(huge), "1000000")
    assert result.stdout == (
        f"refused: {huge}: 5.0 GiB is far too large for a cluster spec (at most 1000000 bytes)\n"
    )


def test_the_limit_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_small_file(path, limit=100, what="cluster spec") == b"x" * 100
    with pytest.raises(SpecError) as caught:
        read_small_file(path, limit=99, what="cluster spec")
    assert caught.value.problems == [f"{path}: 100 bytes is far too large for a cluster spec (at most 99 bytes)"]


def test_missing_paths_say_so(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        read_small_file(tmp_path / "nope", limit=10, what="cluster spec")
    assert caught.value.problems == [f"{tmp_path / 'nope'}: no such file"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(SpecError) as caught:
        read_small_file(tmp_path / "file" / "below", limit=10, what="cluster spec")
    assert caught.value.problems == [
        f"{tmp_path / 'file' / 'below'}: no such file (a part of the path is not a directory)"
    ]


# --- The three readers use it: load_spec, the catalog's key check, the Alibaba program's key ------------


def test_validate_on_dev_zero_and_a_fifo_exits_2_at_once(fifo: Path) -> None:
    # A path on the command line that is not a file to read is a usage error (exit 2), as a missing one.
    for path, kind in (("/dev/zero", "a character device"), (str(fifo), "a named pipe (FIFO)")):
        result = guarded("import sys; from toolkit.cli import main; sys.exit(main(sys.argv[1:]))", "validate", path)
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            f"{path}: is {kind}, not a regular file; give a cluster spec YAML file, e.g. examples/local-lab.yaml\n"
        )


KEY_SPEC = """\
name: t
provider: alicloud
region: cn-beijing
zone: cn-beijing-h
node_pools: [{{name: gpu, instance_type: ecs.ebmgn7ex.32xlarge, count: 2}}]
network: {{fabric: erdma, admin_cidr: 203.0.113.0/24}}
ssh: {{public_key: {key}}}
lifecycle: {{ttl: 8h, idle_stop_minutes: 60}}
"""

CHECK_KEY = """
import sys
from toolkit.catalog.checks import check_spec
from toolkit.spec import load_spec_text
print(check_spec(load_spec_text(sys.argv[1]), source="s.yaml").problems)
"""

READ_KEY = """
import sys
from toolkit.errors import SpecError
from toolkit.spec.files import read_public_key
from toolkit.spec import load_spec_text
try:
    print(read_public_key(load_spec_text(sys.argv[1])))
except SpecError as error:
    print("refused:", error.problems)
"""


@pytest.mark.parametrize(
    ("kind", "shown"),
    [("zero", "a character device"), ("fifo", "a named pipe (FIFO)"), ("dir", "a directory")],
)
def test_the_key_readers_refuse_what_is_not_a_key_file(tmp_path: Path, kind: str, shown: str) -> None:
    key = Path("/dev/zero") if kind == "zero" else tmp_path / "id.pub"
    if kind == "fifo":
        os.mkfifo(key)
    elif kind == "dir":
        key.mkdir()
    text = KEY_SPEC.format(key=key)
    problem = f"ssh.public_key: {key}: is {shown}, not a regular file; give the path of a public key file (.pub)"
    assert guarded(CHECK_KEY, text).stdout == f"{[f's.yaml: {problem}']}\n"
    assert guarded(READ_KEY, text).stdout == f"refused: {[problem]}\n"


def test_read_public_key_reads_a_real_key_and_refuses_two(tmp_path: Path) -> None:
    from toolkit.spec import load_spec_text
    from toolkit.spec.files import read_public_key

    key = tmp_path / "id.pub"
    key.write_text(KEY)
    assert read_public_key(load_spec_text(KEY_SPEC.format(key=key))) == KEY.strip()
    key.write_text(KEY + "command=\"touch /tmp/x\" " + KEY)
    with pytest.raises(SpecError) as caught:
        read_public_key(load_spec_text(KEY_SPEC.format(key=key)))
    assert caught.value.problems == [
        f"ssh.public_key: {key}: holds more than one line or control characters; one OpenSSH key per file"
    ]
