"""The sandbox's wire format: JSON plus raw tensor bytes. Reading it executes nothing.

The parent never unpickles what a student process wrote (DESIGN.md, trust boundary).
A message is: 8-byte big-endian header length, a JSON header, then the raw buffers the
header points to. Tensors are rebuilt in the parent with `torch.frombuffer` from bytes whose
length is checked against shape x itemsize, so whatever object the student returned (a
Tensor subclass with a friendly `__eq__`, say) arrives as a plain `torch.Tensor` of its data.
"""
from __future__ import annotations

import json
import math
import socket
import struct
from typing import Any

import torch

MAX_MESSAGE = 1 << 30   # 1 GiB: a child cannot make the parent allocate more than this

_DTYPES = {
    str(d): d for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
        torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
    )
}


class WireError(Exception):
    """A malformed message: the other side is broken or hostile."""


def _encode(obj: Any, buffers: list[bytes], depth: int = 0) -> Any:
    if depth > 50:
        raise WireError("structure nested more than 50 levels deep")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return {"int": str(obj)} if abs(obj) > 2**53 else obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        kind = type(obj).__module__ + "." + type(obj).__qualname__
        if str(t.dtype) not in _DTYPES:
            raise WireError(f"tensors of dtype {t.dtype} cannot be returned")
        # reshape(-1) after contiguous(): 0-d tensors and size-1 dims with odd strides view cleanly
        t = torch.Tensor.contiguous(torch.Tensor.cpu(t.as_subclass(torch.Tensor))).reshape(-1)
        buffers.append(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        return {"tensor": len(buffers) - 1, "dtype": str(t.dtype), "shape": list(obj.shape),
                "type": kind, "requires_grad": bool(obj.requires_grad)}
    if isinstance(obj, (bytes, bytearray)):
        buffers.append(bytes(obj))
        return {"bytes": len(buffers) - 1}
    if isinstance(obj, tuple):
        return {"tuple": [_encode(x, buffers, depth + 1) for x in obj]}
    if isinstance(obj, list):
        return [_encode(x, buffers, depth + 1) for x in obj]
    if isinstance(obj, dict):
        return {"dict": [[_encode(k, buffers, depth + 1), _encode(v, buffers, depth + 1)] for k, v in obj.items()]}
    if hasattr(obj, "__index__") and type(obj).__module__ == "numpy":
        return int(obj)
    if hasattr(obj, "__float__") and type(obj).__module__ == "numpy":
        return float(obj)
    if type(obj).__module__ == "numpy" and hasattr(obj, "shape"):
        return _encode(torch.from_numpy(obj.copy()), buffers, depth)
    raise WireError(f"values of type {type(obj).__name__} cannot be returned "
                    "(return tensors, numbers, strings, bytes, lists, tuples or dicts)")


def _decode(node: Any, buffers: list[bytes], depth: int = 0) -> Any:
    if depth > 60:
        raise WireError("structure nested too deeply")
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list):
        return [_decode(x, buffers, depth + 1) for x in node]
    if not isinstance(node, dict) or len(node) == 0:
        raise WireError("malformed node")
    if "tensor" in node:
        dtype = _DTYPES.get(node.get("dtype"))
        shape = node.get("shape")
        if dtype is None or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise WireError("malformed tensor header")
        raw = _buffer(buffers, node["tensor"])
        numel = math.prod(shape)
        itemsize = torch.empty((), dtype=dtype).element_size()
        if len(raw) != numel * itemsize:
            raise WireError("tensor data does not match its shape")
        if numel == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
        return _mark(t, str(node.get("type", "torch.Tensor")), bool(node.get("requires_grad")))
    if "bytes" in node:
        return _buffer(buffers, node["bytes"])
    if "int" in node:
        return int(node["int"])
    if "float" in node:
        return float(node["float"])
    if "tuple" in node:
        return tuple(_decode(x, buffers, depth + 1) for x in node["tuple"])
    if "dict" in node:
        out = {}
        for pair in node["dict"]:
            k = _decode(pair[0], buffers, depth + 1)
            if isinstance(k, (list, dict, torch.Tensor)):
                raise WireError("unhashable dict key")
            out[k] = _decode(pair[1], buffers, depth + 1)
        return out
    raise WireError("unknown node")


def _buffer(buffers: list[bytes], i: Any) -> bytes:
    if not isinstance(i, int) or not 0 <= i < len(buffers):
        raise WireError("bad buffer reference")
    return buffers[i]


def _mark(t: torch.Tensor, kind: str, requires_grad: bool) -> torch.Tensor:
    """Remember what the child claimed about a tensor (its type, requires_grad) on the plain
    tensor rebuilt here, so the comparison can reject subclasses with a clear message."""
    if kind != "torch.Tensor" or requires_grad:
        t._grader_origin = (kind, requires_grad)
    return t


def claimed_type(t: torch.Tensor) -> str:
    return getattr(t, "_grader_origin", ("torch.Tensor", False))[0]


def claimed_requires_grad(t: torch.Tensor) -> bool:
    return getattr(t, "_grader_origin", ("torch.Tensor", False))[1]


def dumps(obj: Any) -> bytes:
    buffers: list[bytes] = []
    header = json.dumps({"value": _encode(obj, buffers), "sizes": [len(b) for b in buffers]}).encode()
    return b"".join([struct.pack(">Q", len(header)), header, *buffers])


def loads(data: bytes) -> Any:
    if len(data) < 8:
        raise WireError("truncated message")
    (hlen,) = struct.unpack(">Q", data[:8])
    if hlen > len(data) - 8:
        raise WireError("truncated header")
    try:
        header = json.loads(data[8:8 + hlen])
    except ValueError as e:
        raise WireError(f"header is not JSON: {e}") from None
    sizes = header.get("sizes") if isinstance(header, dict) else None
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise WireError("malformed sizes")
    buffers, pos = [], 8 + hlen
    for s in sizes:
        if pos + s > len(data):
            raise WireError("truncated buffer")
        buffers.append(data[pos:pos + s])
        pos += s
    return _decode(header.get("value"), buffers)


def send(sock: socket.socket, obj: Any) -> None:
    payload = dumps(obj)
    sock.sendall(struct.pack(">Q", len(payload)) + payload)


def recv(sock: socket.socket, limit: int = MAX_MESSAGE) -> Any:
    """Read one message; raises EOFError when the other side closed, WireError when it lied."""
    n = struct.unpack(">Q", _read_exact(sock, 8))[0]
    if n > limit:
        raise WireError(f"message of {n} bytes exceeds the {limit}-byte limit")
    return loads(_read_exact(sock, n))


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        buf += chunk
    return bytes(buf)
