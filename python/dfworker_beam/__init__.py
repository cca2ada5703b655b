"""Beam transforms for the model handlers of dfworker pipelines.

`dfworker export PIPELINE.yaml --to beam --out DIR` writes a Beam YAML file whose `providers:`
entry (type python, no packages) maps transform types to the classes here:

  DfworkerMlpInference      -> dfworker_beam.MlpInference       (MlpModelHandlerSafetensors)
  DfworkerSentenceEmbedding -> dfworker_beam.SentenceEmbedding  (SentenceEmbeddingHandler)

Both take the same model directory dfworker reads and emit dfworker's output shape: the input
row plus `inference_tag` holding {example, inference, model_id} (Beam's PredictionResult fields).
"""
from dfworker_beam.transforms import ManualStep, MlpInference, SentenceEmbedding

__all__ = ["ManualStep", "MlpInference", "SentenceEmbedding"]
