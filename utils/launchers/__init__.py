"""How a sweep's points run: `local` (one process after another on this machine) or `ray` (one task per point on
the nodes of a Ray cluster). Both run the normal benchmark.py and leave each point's run directory in the sweep
directory, so everything that reads run directories works the same on either."""
from __future__ import annotations

import os
from typing import Mapping, Optional

from utils.launchers.base import Launcher, LauncherError

NAMES = ("local", "ray")


def make_launcher(name: str, ray_address: Optional[str], environment: Mapping[str, str] = os.environ) -> Launcher:
    """The launcher the command line asks for; LauncherError (exit status 2) for flags that do not fit it."""
    if name == "local":
        if ray_address:
            raise LauncherError("--ray-address is only for --launcher ray; add --launcher ray to run the points "
                                "on that cluster")
        from utils.launchers.local import LocalLauncher

        return LocalLauncher()
    address = ray_address or environment.get("RAY_ADDRESS", "").strip()
    if not address:
        raise LauncherError("--launcher ray needs the cluster's address: --ray-address HOST:PORT (the head's "
                            "`ray start --head --port`), --ray-address auto for a cluster started on this machine, "
                            "or RAY_ADDRESS")
    from utils.launchers.ray_cluster import RayLauncher

    return RayLauncher(address)
