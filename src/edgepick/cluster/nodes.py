"""The device farm's nodes: connecting to Ray, listing nodes and their device tags, and each
node's probed profile (seed 000 §3.4: the device's own measured bandwidth and RAM, not its spec).

A node's profile lives in a detached Ray actor pinned to that node (named `profile:<tag>:<node>`),
so it disappears with the node and a driver anywhere in the cluster can read it.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from dataclasses import dataclass, field

from edgepick.errors import EdgepickError
from edgepick.plan.cluster_section import TAG_RE

RAY_NAMESPACE = "edgepick"
TAG_PREFIX = "device:"
_PROFILE = "profile:"


def tag_resource(tag: str) -> str:
    return TAG_PREFIX + tag


def check_tag(tag: str) -> str:
    if not TAG_RE.match(tag):
        raise EdgepickError(f"device tag '{tag}': expected letters, digits, '.', '_' or '-' "
                            "(it becomes the Ray resource device:<tag>)")
    return tag


# Ray's single-machine mode (its default on macOS and Windows): the node's address is 127.0.0.1,
# so every Ray server of this machine (GCS, raylet, workers, agents) listens on loopback only.
# Ray reads it when it is imported; Ray refuses to join other nodes in it.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def is_loopback(host_or_address: str | None) -> bool:
    """True for 127.x.x.x, ::1 and localhost, with or without a port."""
    if not host_or_address:
        return False
    host = host_or_address.strip()
    if host.startswith("["):  # [::1]:6379
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host.lower() == "localhost"
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback  # ::ffff:127.0.0.1 too


def use_loopback() -> None:
    """Keep this process's Ray, and every Ray process it starts, on 127.0.0.1. Call it before Ray
    is first imported: Ray fixes its mode then."""
    os.environ.update(LOOPBACK_ENV)


def require_ray():
    """Ray, with the parts edgepick uses (its errors, node-affinity scheduling): the one place
    that imports it, after the environment it reads at import is set, and one line naming the
    extra when it is not installed."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # A Ray cluster runs whatever code it is sent: every edgepick process, head, node or driver,
    # speaks with the cluster's token (~/.ray/auth_token), as Ray itself will by default.
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    try:
        import ray
        import ray.exceptions
        import ray.util.scheduling_strategies
    except ImportError:
        raise EdgepickError("Ray is not installed; install the extra: pip install 'edgepick[ray]'") \
            from None
    return ray


def has_token() -> bool:
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.expanduser("~/.ray/auth_token")
    return bool(os.environ.get("RAY_AUTH_TOKEN")) or os.path.isfile(path)


def connect(address: str | None = None, loopback: bool | None = None) -> bool:
    """Join the cluster at `address` (`auto` = the one started on this machine), or start a
    private Ray for this process when none is given; True when this call started Ray. A private
    Ray, and a head at a loopback address, are reached over 127.0.0.1 only (unless `loopback`
    says otherwise)."""
    late = "ray" in sys.modules and os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") != "0"
    if loopback if loopback is not None else (address is None or is_loopback(address)):
        use_loopback()
    ray = require_ray()
    if ray.is_initialized():
        return False
    common = dict(namespace=RAY_NAMESPACE, log_to_driver=False, configure_logging=False)
    if address and os.environ.get("RAY_AUTH_MODE") == "token" and not has_token():
        raise EdgepickError(f"no Ray token on this machine to join {address}: copy the head's "
                            "~/.ray/auth_token here (`ray get-auth-token` prints it there), or "
                            "set RAY_AUTH_TOKEN")
    try:
        if address:
            ray.init(address=address, **common)
        else:
            ray.init(address="local", include_dashboard=False, **common)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        hint = ""
        if is_loopback(address) and late:
            hint = ("; Ray was imported before edgepick could keep it on loopback: set "
                    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 before starting Python")
        raise EdgepickError(f"cannot reach the Ray cluster at {address or 'a local Ray'}: "
                            f"{first}{hint}") from None
    return True


@dataclass
class NodeInfo:
    node_id: str
    host: str
    address: str
    alive: bool
    devices: list[str] = field(default_factory=list)
    cpus: float = 0.0
    memory_bytes: int = 0


def cluster_nodes() -> list[NodeInfo]:
    ray = require_ray()
    out = []
    for n in ray.nodes():
        res = n.get("Resources") or {}
        out.append(NodeInfo(
            node_id=n.get("NodeID", ""), host=n.get("NodeManagerHostname", ""),
            address=n.get("NodeManagerAddress", ""), alive=bool(n.get("Alive")),
            devices=sorted(k[len(TAG_PREFIX):] for k in res if k.startswith(TAG_PREFIX)),
            cpus=float(res.get("CPU", 0)), memory_bytes=int(res.get("memory", 0))))
    return out


class _ProfileHolder:
    """Holds one node's probed DeviceProfile (as JSON) for as long as the node lives."""

    def __init__(self, profile: dict) -> None:
        self.profile = profile

    def get(self) -> dict:
        return self.profile


def publish_profile(tag: str, profile: dict) -> str:
    """Pin this node's profile to this node (the one the calling process runs on); returns
    the actor's name. A previous profile of the same node and tag is replaced."""
    ray = require_ray()

    node_id = ray.get_runtime_context().get_node_id()
    name = f"{_PROFILE}{tag}:{node_id}"
    try:
        ray.kill(ray.get_actor(name, namespace=RAY_NAMESPACE))
    except ValueError:
        pass
    holder = ray.remote(num_cpus=0)(_ProfileHolder).options(
        name=name, namespace=RAY_NAMESPACE, lifetime="detached",
        scheduling_strategy=ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            node_id, soft=False))
    handle = holder.remote(profile)
    ray.get(handle.get.remote(), timeout=60)  # created and answering before we leave
    return name


def withdraw_profile(name: str) -> None:
    """Remove a published profile (its node is about to stop)."""
    ray = require_ray()
    try:
        ray.kill(ray.get_actor(name, namespace=RAY_NAMESPACE))
    except ValueError:
        pass  # already gone


def published_profiles(timeout_s: float = 10.0) -> dict[str, list[tuple[str, dict]]]:
    """Device tag -> [(node id, profile JSON)] for every live node that published one."""
    ray = require_ray()

    alive = {n.node_id for n in cluster_nodes() if n.alive}
    out: dict[str, list[tuple[str, dict]]] = {}
    for name in ray.util.list_named_actors():
        if not name.startswith(_PROFILE):
            continue
        tag, _, node_id = name[len(_PROFILE):].rpartition(":")
        if node_id not in alive:
            continue
        try:
            profile = ray.get(ray.get_actor(name, namespace=RAY_NAMESPACE).get.remote(),
                              timeout=timeout_s)
        except (ray.exceptions.RayError, ValueError):
            continue  # its node is going away: the profile goes with it
        out.setdefault(tag, []).append((node_id, profile))
    return out
