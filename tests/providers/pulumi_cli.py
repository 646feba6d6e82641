"""A fake `pulumi` executable for tests that fake the Automation layer: it answers `pulumi version`
(which gpuctl's preflight runs itself, bounded) and refuses anything else, so a test notices when
something would reach a real CLI. There is no real Pulumi CLI in the test environment."""

from __future__ import annotations

from pathlib import Path

# The CLI version the fakes report by default: the installed Pulumi SDK's (3.272.0), above the 3.181.0
# minimum (toolkit/providers/pulumi/cli.py MIN_CLI).
GOOD_VERSION = "v3.272.0"


def write_fake_cli(folder: Path, version_script: str = f"echo {GOOD_VERSION}") -> Path:
    """`folder/pulumi`, whose `pulumi version` runs `version_script` (shell); any other command fails."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pulumi"
    path.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = version ]; then\n'
        f"{version_script}\n"
        "exit $?\n"
        "fi\n"
        "echo 'the fake pulumi must not run' >&2\n"
        "exit 99\n"
    )
    path.chmod(0o755)
    return path
