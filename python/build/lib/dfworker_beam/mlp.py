"""The MLP of dfworker's MlpModelHandlerSafetensors in numpy: the same config.json (model_type
mlp, input_dim, layers [{name, out_features, activation, bias}], output softmax|none) and the
same model.safetensors (<name>.weight [out, in], <name>.bias [out]), computed in float32."""
import ast
import json
import math

import numpy as np

from dfworker_beam import safetensors_np


def _erf(x):
  # numpy has no erf; math.erf per element is exact and fast enough for activations of an MLP.
  return np.vectorize(math.erf, otypes=[np.float32])(x)


_ACTIVATIONS = {
    "none": lambda x: x,
    "linear": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32),
    "gelu_new": lambda x: 0.5 * x * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (x + 0.044715 * x**3))),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}
_ACTIVATIONS["gelu_tanh"] = _ACTIVATIONS["gelu_new"]
_ACTIVATIONS["gelu_pytorch_tanh"] = _ACTIVATIONS["gelu_new"]


def _read(path, mode="rb"):
  # Beam's FileSystems reads local paths and gs:// alike (the model directory on Dataflow).
  from apache_beam.io.filesystems import FileSystems
  with FileSystems.open(path) as f:
    data = f.read()
  return data if mode == "rb" else data.decode("utf-8")


class Mlp:
  def __init__(self, model_path: str):
    if model_path.endswith(".safetensors"):
      weights_path = model_path
      config_path = model_path.rsplit("/", 1)[0] + "/config.json" if "/" in model_path else "config.json"
    else:
      weights_path = model_path.rstrip("/") + "/model.safetensors"
      config_path = model_path.rstrip("/") + "/config.json"
    cfg = json.loads(_read(config_path, "r"))
    if cfg.get("model_type") != "mlp":
      raise ValueError(f"{config_path}: model_type is {cfg.get('model_type')!r}; this handler supports 'mlp'")
    tensors = safetensors_np.load(_read(weights_path))
    self.input_dim = int(cfg["input_dim"])
    self.softmax = cfg.get("output", "none") == "softmax"
    self.layers = []
    width = self.input_dim
    for layer in cfg["layers"]:
      w = tensors[layer["name"] + ".weight"].astype(np.float32)
      if w.shape != (layer["out_features"], width):
        raise ValueError(f"{weights_path}: {layer['name']}.weight has shape {w.shape}, config implies "
                         f"{(layer['out_features'], width)}")
      b = tensors[layer["name"] + ".bias"].astype(np.float32) if layer.get("bias", True) else None
      act = layer.get("activation", "none")
      if act not in _ACTIVATIONS:
        raise ValueError(f"{config_path}: unknown activation {act!r}")
      self.layers.append((np.ascontiguousarray(w.T), b, _ACTIVATIONS[act]))
      width = layer["out_features"]

  def parse_example(self, x):
    """Beam's ReadFromJson (pandas) hands a list column over as the Python repr of the list, so a
    string is read back as a literal; anything else is taken as it is."""
    if isinstance(x, str):
      try:
        return json.loads(x)  # the repr of a list of numbers is JSON, and json parses it ~10x faster
      except ValueError:
        pass
      try:
        return ast.literal_eval(x)
      except (ValueError, SyntaxError):
        return x
    return x

  def check_example(self, x):
    """None when `x` is a usable example, else the reason (as dfworker words it)."""
    if not isinstance(x, (list, tuple)) and not hasattr(x, "__len__"):
      return f"expected a list of {self.input_dim} numbers, got {type(x).__name__}"
    if len(x) != self.input_dim:
      return f"expected a list of {self.input_dim} numbers, got a list of {len(x)}"
    if all(type(v) is float or type(v) is int for v in x):  # the common case, without the per-type checks below
      return None
    for i, v in enumerate(x):
      if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
        return f"element {i} is {type(v).__name__} {v!r}, expected a number"
    return None

  def __call__(self, batch):
    """[n][input_dim] numbers -> float32 [n][output_dim]."""
    x = np.asarray(batch, dtype=np.float32)
    for w_t, b, act in self.layers:
      x = x @ w_t
      if b is not None:
        x += b
      x = act(x).astype(np.float32, copy=False)
    if self.softmax:
      x = np.exp(x - x.max(axis=1, keepdims=True))
      x /= x.sum(axis=1, keepdims=True)
    return x
