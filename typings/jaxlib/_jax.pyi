# jaxlib's compiled core ships no types, so every jax signature that names one of its classes
# (a `device=` parameter, a Device from jax.devices()) is unknown to pyright. This stub makes
# Device a class and leaves the rest of the module `Any`: known to be untyped, not unknown.
from typing import Any

class Device:
    platform: str
    device_kind: str
    id: int
    def __getattr__(self, name: str) -> Any: ...

def __getattr__(name: str) -> Any: ...
