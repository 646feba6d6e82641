"""The small lab spec the lab's state, capture and hostile-input tests share (cluster `hostile`)."""

from __future__ import annotations

from pathlib import Path

NAME = "hostile"


def write_lab_spec(directory: Path, *, capture: str | Path | None = None, image: str | None = None,
                   mtu: int | None = None) -> Path:
    """`directory`/hostile.yaml: a 2-node tcp lab; `capture`, `image` and `mtu` only where given."""
    pool_extra = (f"\n    image: {image}" if image is not None else "") + \
        (f"\n    capture: {capture}" if capture is not None else "")
    network = "fabric: tcp" + (f", mtu: {mtu}" if mtu is not None else "") + ", admin_cidr: 127.0.0.0/8"
    path = directory / "hostile.yaml"
    path.write_text(f"""\
name: {NAME}
provider: local
node_pools:
  - name: n
    instance_type: lab
    count: 2{pool_extra}
network: {{{network}}}
lifecycle: {{ttl: 2h}}
""")
    return path
