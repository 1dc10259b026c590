"""The sandbox's wire format: round trips data, rebuilds plain tensors, rejects lies, never unpickles."""
import struct

import pytest
import torch

from grader.sandbox import wire


def test_round_trip_of_nested_values():
    value = {"a": (torch.arange(6, dtype=torch.float64).reshape(2, 3), [1, 2.5, None, True]),
             "b": b"\x00bytes", "c": "text", 3: float("inf"), "big": 2**70, "empty": torch.empty(0, 4)}
    back = wire.loads(wire.dumps(value))
    assert torch.equal(back["a"][0], value["a"][0]) and back["a"][0].dtype == torch.float64
    assert back["a"][1] == [1, 2.5, None, True] and isinstance(back["a"], tuple)
    assert back["b"] == b"\x00bytes" and back[3] == float("inf") and back["big"] == 2**70
    assert back["empty"].shape == (0, 4)


def test_bool_and_int_tensors_keep_their_dtype():
    for t in (torch.tensor([[True, False]]), torch.arange(5), torch.tensor([1, 2], dtype=torch.int32)):
        back = wire.loads(wire.dumps(t))
        assert back.dtype == t.dtype and torch.equal(back, t)


def test_a_subclass_arrives_as_a_plain_tensor_with_its_claimed_type_recorded():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True
    t = torch.zeros(3).as_subclass(Liar)
    back = wire.loads(wire.dumps(t))
    assert type(back) is torch.Tensor
    assert wire.claimed_type(back).endswith("Liar")


def test_non_contiguous_and_requires_grad_tensors():
    t = torch.arange(12.0).reshape(3, 4).T
    back = wire.loads(wire.dumps(t))
    assert torch.equal(back, t)
    g = torch.ones(2, requires_grad=True)
    assert wire.claimed_requires_grad(wire.loads(wire.dumps(g)))


def test_unsendable_values_are_refused_with_a_message():
    with pytest.raises(wire.WireError, match="cannot be returned"):
        wire.dumps(object())


def _message(header: dict, *buffers: bytes) -> bytes:
    import json
    h = json.dumps(header).encode()
    return struct.pack(">Q", len(h)) + h + b"".join(buffers)


@pytest.mark.parametrize("header,buffers", [
    ({"value": {"tensor": 0, "dtype": "torch.float32", "shape": [4]}, "sizes": [8]}, [b"\x00" * 8]),  # too short
    ({"value": {"tensor": 5, "dtype": "torch.float32", "shape": [1]}, "sizes": [4]}, [b"\x00" * 4]),  # bad ref
    ({"value": {"tensor": 0, "dtype": "builtins.object", "shape": [1]}, "sizes": [4]}, [b"\x00" * 4]),
    ({"value": {"pickle": "gASV"}, "sizes": []}, []),
    ({"value": 1, "sizes": [100]}, [b"x"]),                                                           # truncated
])
def test_malformed_messages_are_rejected(header, buffers):
    with pytest.raises(wire.WireError):
        wire.loads(_message(header, *buffers))


def test_a_pickle_is_just_bytes_that_fail_to_parse():
    import pickle
    with pytest.raises(wire.WireError):
        wire.loads(pickle.dumps({"x": 1}))


def test_zero_dim_and_odd_strided_tensors():
    scalar = torch.tensor(3.5)
    back = wire.loads(wire.dumps(scalar))
    assert back.shape == () and back.item() == 3.5
    odd = torch.einsum("nchw->nc", torch.ones(2, 3, 4, 4))[:, :, None, None]
    assert torch.equal(wire.loads(wire.dumps(odd)), odd)
