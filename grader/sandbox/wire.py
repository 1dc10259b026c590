"""The sandbox's wire format: JSON plus raw tensor bytes. Reading it executes nothing.

The parent never unpickles what a student process wrote (DESIGN.md, trust boundary).
A message is: 8-byte big-endian header length, a JSON header, then the raw buffers the
header points to. Tensors are rebuilt in the parent with `torch.frombuffer` from bytes whose
length is checked against shape x itemsize, so whatever object the student returned (a
Tensor subclass with a friendly `__eq__`, say) arrives as a plain `torch.Tensor` of its data.

Every string decoded is one a report can write: a lone surrogate, which JSON carries and UTF-8
cannot, arrives as its escape (grader.student_text).

Decoding is bounded, because the other side may be hostile: a message may cost the reader at
most about twice its size plus a fixed ceiling (the header's JSON values, counted before they
are parsed, are the only part that costs more than its bytes). Every failure to decode, whatever
the bytes provoke, is a `WireError`; `recv` finishes by a wall-clock deadline or raises
`socket.timeout`, however slowly the bytes arrive.
"""
from __future__ import annotations

import json
import math
import socket
import struct
import time
from typing import Any

import numpy
import torch

from grader.student_text import encodable

MAX_MESSAGE = 1 << 30   # 1 GiB: a child cannot make the parent allocate more than this
# Bounds of one header, far above the curriculum's largest reply (a tokenizer's ~44,000 byte
# tokens: 0.9 MiB of JSON and ~176,000 values with a node each, 0.2 MiB and ~44,000 values as one
# list of bytes) and low enough that parsing costs at most ~100 MB.
MAX_HEADER = 8 << 20    # bytes of JSON
MAX_VALUES = 1 << 20    # JSON values, bounded from above by counting [ { , : before parsing
MAX_TENSORS = 1 << 14   # each rebuilt tensor costs ~1 KB beyond its data
MAX_DEPTH = 60          # nesting of decoded values (the encoder refuses more than 50)

_DTYPES = {
    str(d): d for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
        torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
    )
}


# torch's own subclasses that are a tensor's values and nothing more: `nn.Parameter(pe, requires_grad=False)`
# is how textbooks keep a fixed buffer, and its values are the answer. A subclass of these is not one of them.
_PLAIN = (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer)


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
        kind = "torch.Tensor" if type(obj) in _PLAIN else type(obj).__module__ + "." + type(obj).__qualname__
        if str(t.dtype) not in _DTYPES:
            raise WireError(f"tensors of dtype {t.dtype} cannot be returned")
        if t.is_nested:
            raise WireError("a nested tensor cannot be returned: return a regular tensor (torch.stack, or pad "
                            "to one shape)")
        if t.layout != torch.strided:
            raise WireError(f"a {str(t.layout).replace('torch.', '')} tensor cannot be returned: return a dense "
                            "one (.to_dense())")
        if t.device.type == "meta":
            raise WireError("a tensor on the meta device holds no values and cannot be returned: compute it from "
                            "the inputs, on their device")
        # reshape(-1) after contiguous(): 0-d tensors and size-1 dims with odd strides view cleanly
        t = torch.Tensor.contiguous(torch.Tensor.cpu(t.as_subclass(torch.Tensor))).reshape(-1)
        buffers.append(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        return {"tensor": len(buffers) - 1, "dtype": str(t.dtype), "shape": list(obj.shape), "type": kind}
    if isinstance(obj, (bytes, bytearray)):
        buffers.append(bytes(obj))
        return {"bytes": len(buffers) - 1}
    if isinstance(obj, tuple):
        return {"tuple": [_encode(x, buffers, depth + 1) for x in obj]}
    if isinstance(obj, list):
        if obj and all(type(x) in (bytes, bytearray) for x in obj):
            # Rationale: a tokenizer's ~44,000 byte tokens, one buffer and one node each, took 50 ms to
            # encode and 45-190 ms to decode; as one buffer and their lengths, ~10 ms in all
            buffers.append(b"".join(obj))
            return {"bytes_list": len(buffers) - 1, "lengths": [len(x) for x in obj]}
        return [_encode(x, buffers, depth + 1) for x in obj]
    if isinstance(obj, dict):
        return {"dict": [[_encode(k, buffers, depth + 1), _encode(v, buffers, depth + 1)] for k, v in obj.items()]}
    if type(obj).__module__ == "numpy" and isinstance(getattr(obj, "shape", None), tuple) and obj.shape:
        # Rationale: arrays have __index__ too, so this comes before the scalar branches; a
        # silent conversion would pass a function whose docstring asks for a tensor.
        raise WireError(f"values of type numpy.ndarray cannot be returned (yours has shape {obj.shape} and "
                        f"dtype {obj.dtype}): return a torch.Tensor (torch.from_numpy(x) makes one) or, "
                        "where the exercise asks for a list, x.tolist()")
    if type(obj).__module__ == "numpy" and isinstance(getattr(obj, "dtype", None), numpy.dtype):
        number = obj.item()         # numpy scalars (and 0-d arrays) travel as Python numbers
        if isinstance(number, (bool, int, float)):
            return _encode(number, buffers, depth)
    return _unsendable(obj)


def _unsendable(obj: Any) -> Any:
    raise WireError(f"values of type {type(obj).__name__} cannot be returned "
                    "(return tensors, numbers, strings, bytes, lists, tuples or dicts)")


def _decode(node: Any, buffers: list[memoryview], depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("structure nested too deeply")
    if isinstance(node, str):       # JSON carries lone surrogates, which no report can write
        return encodable(node)
    if node is None or isinstance(node, (bool, int, float)):
        return node
    if isinstance(node, list):      # in place: a decoded node frees its JSON as it goes
        for i, x in enumerate(node):
            node[i] = _decode(x, buffers, depth + 1)
        return node
    if not isinstance(node, dict) or len(node) == 0:
        raise WireError("malformed node")
    if "tensor" in node:
        dtype = _DTYPES.get(node.get("dtype"))
        shape = node.get("shape")
        if dtype is None or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise WireError("malformed tensor header")
        raw = _buffer(buffers, node["tensor"])
        if len(shape) > 32:
            raise WireError("tensor of more than 32 dimensions")
        numel = math.prod(shape)
        itemsize = torch.empty((), dtype=dtype).element_size()
        if len(raw) != numel * itemsize:
            raise WireError("tensor data does not match its shape")
        t = torch.empty(shape, dtype=dtype)     # the data is copied once, out of the message
        if numel:
            t.view(-1).view(torch.uint8).numpy()[:] = numpy.frombuffer(raw, dtype=numpy.uint8)
        return _mark(t, encodable(str(node.get("type", "torch.Tensor"))))
    if "bytes" in node:
        return bytes(_buffer(buffers, node["bytes"]))
    if "bytes_list" in node:
        raw, lengths = _buffer(buffers, node["bytes_list"]), node.get("lengths")
        if not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths) \
                or sum(lengths) != len(raw):
            raise WireError("malformed list of bytes")
        data, out, pos = raw.tobytes(), [], 0
        for n in lengths:
            out.append(data[pos:pos + n])
            pos += n
        return out
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


def _buffer(buffers: list[memoryview], i: Any) -> memoryview:
    if not isinstance(i, int) or not 0 <= i < len(buffers):
        raise WireError("bad buffer reference")
    return buffers[i]


def _mark(t: torch.Tensor, kind: str) -> torch.Tensor:
    """Remember what the child claimed about a tensor's type on the plain tensor rebuilt here, so
    the comparison can reject subclasses with a clear message. Whether it required grad is not
    sent: a value is a value (an output of the student's own nn.Linear requires grad, and is right)."""
    if kind != "torch.Tensor":
        t._grader_origin = kind
    return t


def claimed_type(t: torch.Tensor) -> str:
    return getattr(t, "_grader_origin", "torch.Tensor")


def dumps(obj: Any) -> bytes:
    buffers: list[bytes] = []
    header = json.dumps({"value": _encode(obj, buffers), "sizes": [len(b) for b in buffers]}).encode()
    return b"".join([struct.pack(">Q", len(header)), header, *buffers])


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Decode one message. Whatever the bytes are, the only exception is WireError."""
    view = memoryview(data)
    try:
        return _loads(view)
    except WireError:
        raise
    except Exception as e:  # noqa: BLE001 -- RecursionError, ValueError, MemoryError...: all the bytes' fault
        raise WireError(f"malformed message ({type(e).__name__})") from None
    finally:
        view.release()


def _loads(view: memoryview) -> Any:
    if len(view) < 8:
        raise WireError("truncated message")
    (hlen,) = struct.unpack(">Q", view[:8])
    if hlen > len(view) - 8:
        raise WireError("truncated header")
    if hlen > MAX_HEADER:
        raise WireError(f"header of {hlen} bytes exceeds the {MAX_HEADER}-byte limit")
    text = bytes(view[8:8 + hlen])
    values = 1 + sum(text.count(c) for c in (b"[", b"{", b",", b":"))   # an upper bound, strings included
    if values > MAX_VALUES:
        raise WireError(f"header of more than {MAX_VALUES} values")
    if text.count(b'"tensor"') > MAX_TENSORS:
        raise WireError(f"more than {MAX_TENSORS} tensors in one message")
    try:
        header = json.loads(text)
    except ValueError as e:
        raise WireError(f"header is not JSON: {e}") from None
    del text
    sizes = header.get("sizes") if isinstance(header, dict) else None
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise WireError("malformed sizes")
    buffers, pos = [], 8 + hlen
    for s in sizes:
        if pos + s > len(view):
            raise WireError("truncated buffer")
        buffers.append(view[pos:pos + s])
        pos += s
    try:
        return _decode(header.get("value"), buffers)
    finally:
        for b in buffers:
            b.release()


def arguments(args: tuple | list = (), kwargs: dict | None = None) -> bytes:
    """The message a call's arguments travel in, (args, kwargs) encoded by dumps: made once where the
    same arguments go to many children (grader.pipeline.cases.prepared keeps those of every case)."""
    return dumps((tuple(args), dict(kwargs or {})))


def send(sock: socket.socket, obj: Any, *encoded: bytes) -> None:
    """`obj`, then each of `encoded` (messages dumps made earlier) as a message of its own, in one write."""
    sock.sendall(b"".join(struct.pack(">Q", len(p)) + p for p in (dumps(obj), *encoded)))


def recv(sock: socket.socket, limit: int = MAX_MESSAGE, timeout: float | None = None) -> Any:
    """Read one message; raises EOFError when the other side closed, WireError when it lied, and
    socket.timeout when the whole message (length, header and data) is not in by `timeout` seconds
    from now, however slowly it trickles in (None: wait as long as it takes)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    n = struct.unpack(">Q", _read_exact(sock, 8, deadline))[0]
    if n > limit:
        raise WireError(f"message of {n} bytes exceeds the {limit}-byte limit")
    return loads(_read_exact(sock, n, deadline))


def _read_exact(sock: socket.socket, n: int, deadline: float | None) -> bytearray:
    """`n` bytes; memory grows with what arrives, not with what the length claims."""
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("the message did not arrive in time")
            sock.settimeout(left)
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        buf += chunk
    return buf
