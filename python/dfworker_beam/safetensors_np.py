"""Reads a safetensors file into numpy arrays (the format: 8-byte little-endian header length,
a JSON header of {name: {dtype, shape, data_offsets}}, then the tensor bytes)."""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def _bf16_to_f32(raw):
  u16 = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
  return (u16 << 16).view(np.float32)


def load(data: bytes):
  """Returns {name: float32/int ndarray} from the bytes of a .safetensors file."""
  if len(data) < 8:
    raise ValueError("safetensors: file shorter than its 8-byte header length")
  (n,) = struct.unpack("<Q", data[:8])
  if 8 + n > len(data):
    raise ValueError(f"safetensors: header length {n} is past the end of the file")
  header = json.loads(data[8:8 + n])
  base = 8 + n
  out = {}
  for name, info in header.items():
    if name == "__metadata__":
      continue
    begin, end = info["data_offsets"]
    raw = data[base + begin:base + end]
    dtype = info["dtype"]
    if dtype == "BF16":
      arr = _bf16_to_f32(raw)
    elif dtype in _DTYPES:
      arr = np.frombuffer(raw, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"))
    else:
      raise ValueError(f"safetensors: tensor '{name}' has dtype {dtype}; supported: BF16, {', '.join(_DTYPES)}")
    out[name] = arr.reshape(info["shape"])
  return out
