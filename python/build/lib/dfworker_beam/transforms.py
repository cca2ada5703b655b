"""The Beam transforms: BatchElements -> one model call per batch -> dfworker's output rows.

Each transform takes Beam Rows and emits the input row plus `inference_tag` holding
Row(example, inference, model_id), as dfworker's RunInference does. A row whose example is
missing or malformed, and every row of a batch whose inference raised, goes to the error output
as Beam YAML's standard error row (element, msg, stack) when `error_handling: {output: NAME}` is
given; without it the first such row fails the bundle (dfworker does the same).
"""
import traceback
import typing

import apache_beam as beam
from apache_beam.typehints.row_type import RowTypeConstraint
from apache_beam.typehints.schemas import named_fields_from_element_type
from apache_beam.utils import shared


def _input_fields(pcoll):
  try:
    return list(named_fields_from_element_type(pcoll.element_type))
  except Exception:  # pylint: disable=broad-except
    return None


class _InferFn(beam.DoFn):
  def __init__(self, make_model, model_key, input_field, tag, model_id, fail_bundle):
    self._make_model = make_model
    self._model_key = model_key
    self._input_field = input_field
    self._tag = tag
    self._model_id = model_id
    self._fail_bundle = fail_bundle
    self._shared = shared.Shared()  # one model per process, shared by its threads (as Beam's RunInference)

  def setup(self):
    self._model = self._shared.acquire(self._make_model, tag=self._model_key)

  def _error(self, row, msg, stack=""):
    if self._fail_bundle:
      raise ValueError(f"{msg}; element: {row} (declare error_handling to send failing records to an error output)")
    return beam.pvalue.TaggedOutput("errors", beam.Row(element=row._asdict(), msg=msg, stack=stack))

  def process(self, batch):
    good, examples = [], []
    for row in batch:
      x = self._model.parse_example(getattr(row, self._input_field, None))
      if x is None:
        yield self._error(row, f"RunInference: input field '{self._input_field}' is missing")
        continue
      reason = self._model.check_example(x)
      if reason is not None:
        yield self._error(row, f"RunInference: input field '{self._input_field}': {reason}")
        continue
      good.append(row)
      examples.append(x)
    if not good:
      return
    try:
      predictions = self._model(examples)
      if len(predictions) != len(good):
        raise ValueError(f"model returned {len(predictions)} predictions for {len(good)} examples")
    except Exception as e:  # pylint: disable=broad-except
      stack = traceback.format_exc()
      for row in good:
        yield self._error(row, f"RunInference: inference failed for a batch of {len(good)} rows: {e}", stack)
      return
    for row, x, p in zip(good, examples, predictions):
      result = {"example": x, "inference": [float(v) for v in p], "model_id": self._model_id}
      yield beam.Row(**row._asdict(), **{self._tag: result})


class _RunModel(beam.PTransform):
  """The shared expansion of both transforms."""

  def __init__(self, make_model, model_key, example_type, input_field, inference_tag, model_id, min_batch_size,
               max_batch_size, error_handling):
    super().__init__()
    if error_handling is not None and (not isinstance(error_handling, dict) or "output" not in error_handling):
      raise ValueError("error_handling must be a mapping {output: NAME}")
    self._make_model = make_model
    self._model_key = model_key
    self._example_type = example_type
    self._input_field = input_field
    self._tag = inference_tag
    self._model_id = model_id
    self._min = int(min_batch_size)
    self._max = int(max_batch_size)
    self._error_output = error_handling["output"] if error_handling else None

  def expand(self, pcoll):
    fields = _input_fields(pcoll)
    outputs = (
        pcoll
        | "BatchElements" >> beam.BatchElements(min_batch_size=self._min, max_batch_size=self._max)
        | "Infer" >> beam.ParDo(
            _InferFn(self._make_model, self._model_key, self._input_field, self._tag, self._model_id,
                     fail_bundle=self._error_output is None)).with_outputs("errors", main="good"))
    good, errors = outputs.good, outputs.errors
    if fields is not None:
      # A mapping, not a nested Row: Beam's WriteToJson (pandas) writes a nested Row as a JSON
      # array, a mapping as the object {example, inference, model_id} dfworker writes.
      result_type = typing.Mapping[str, typing.Any]
      good.element_type = RowTypeConstraint.from_fields(
          [(n, t) for n, t in fields if n != self._tag] + [(self._tag, result_type)])
      errors.element_type = RowTypeConstraint.from_fields(
          [("element", typing.Mapping[str, typing.Any]), ("msg", str), ("stack", str)])
    if self._error_output is None:
      return good
    return {"good": good, self._error_output: errors}


class _MlpFactory:
  def __init__(self, model_path):
    self.model_path = model_path

  def __call__(self):
    from dfworker_beam.mlp import Mlp
    return Mlp(self.model_path)


class MlpInference(beam.PTransform):
  """dfworker's RunInference with MlpModelHandlerSafetensors (config.json + model.safetensors)."""

  def __init__(self, model_path: str, input_field: str, inference_tag: str = "inference",
               model_id: typing.Optional[str] = None, min_batch_size: int = 1, max_batch_size: int = 10000,
               error_handling: typing.Optional[typing.Mapping[str, typing.Any]] = None):
    super().__init__()
    self._impl = _RunModel(_MlpFactory(model_path), "dfworker-mlp:" + model_path, typing.List[float], input_field,
                           inference_tag, model_id or model_path, min_batch_size, max_batch_size, error_handling)


  def expand(self, pcoll):
    return pcoll | self._impl


class _SentenceModel:
  """sentence-transformers built module by module, so pooling, normalisation and max length are
  exactly dfworker's (not whatever the model directory's defaults would be)."""

  def __init__(self, model_path, max_seq_length, pooling, normalize):
    from sentence_transformers import SentenceTransformer, models  # pylint: disable=import-outside-toplevel
    word = models.Transformer(model_path, max_seq_length=max_seq_length)
    pool = models.Pooling(word.get_word_embedding_dimension(), pooling_mode=pooling)
    modules = [word, pool] + ([models.Normalize()] if normalize else [])
    self._st = SentenceTransformer(modules=modules)  # the GPU where torch sees one, else the CPU

  def parse_example(self, x):
    return x

  def check_example(self, x):
    return None if isinstance(x, str) else f"expected a string (the text to embed), got {type(x).__name__}"

  def __call__(self, texts):
    return self._st.encode(list(texts), batch_size=32, convert_to_numpy=True)


class _SentenceFactory:
  def __init__(self, *args):
    self.args = args

  def __call__(self):
    return _SentenceModel(*self.args)


class SentenceEmbedding(beam.PTransform):
  """dfworker's RunInference with SentenceEmbeddingHandler, on sentence-transformers."""

  def __init__(self, model_path: str, input_field: str, max_seq_length: int, pooling: str = "mean",
               normalize: bool = True, inference_tag: str = "inference", model_id: typing.Optional[str] = None,
               min_batch_size: int = 1, max_batch_size: int = 10000,
               error_handling: typing.Optional[typing.Mapping[str, typing.Any]] = None):
    super().__init__()
    if pooling not in ("mean", "cls"):
      raise ValueError(f"pooling {pooling!r}: allowed mean, cls")
    key = f"dfworker-st:{model_path}:{max_seq_length}:{pooling}:{normalize}"
    self._impl = _RunModel(_SentenceFactory(model_path, int(max_seq_length), pooling, bool(normalize)), key, str,
                           input_field, inference_tag, model_id or model_path, min_batch_size, max_batch_size,
                           error_handling)

  def expand(self, pcoll):
    return pcoll | self._impl


class ManualStep(beam.PTransform):
  """The placeholder `dfworker export --allow_manual_steps` writes for a transform with no Beam
  equivalent: the YAML loads, and expanding it stops the pipeline with what to replace."""

  def __init__(self, transform: str, dfworker_type: str, reason: str, dfworker_yaml: str = ""):
    super().__init__()
    self._message = (f"manual step: transform '{transform}' ({dfworker_type}) has no Beam equivalent: {reason}. "
                     f"Replace this PyTransform in pipeline.yaml with a Beam transform. The dfworker transform was:\n"
                     f"{dfworker_yaml}")

  def expand(self, pcoll):
    raise NotImplementedError(self._message)
