#!/usr/bin/env python3
"""Trains the default RunInference model: an MLP classifier on the UCI Breast Cancer Wisconsin
(Diagnostic) dataset as bundled with scikit-learn (569 samples, 30 features, 2 classes), and writes
a model directory the MLP handler reads: config.json + model.safetensors, plus sample input JSONL.

Input standardisation (StandardScaler) is folded into the first layer, so the model takes the raw
30 features: W1' = W1 / sigma, b1' = b1 - W1' @ mu.

Usage: python3 scripts/train_default_model.py [OUT_DIR] [SAMPLE_JSONL]
Needs: scikit-learn numpy safetensors (pip; only this script needs them).
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

SEED = 0
HIDDEN = (32, 16)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "pipelines/models/breast_cancer_mlp"
    sample_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(out_dir, "sample.jsonl")
    os.makedirs(out_dir, exist_ok=True)

    data = load_breast_cancer()
    x, y = data.data.astype(np.float64), data.target
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)
    scaler = StandardScaler().fit(x_train)
    clf = MLPClassifier(hidden_layer_sizes=HIDDEN, activation="relu", max_iter=2000, random_state=SEED)
    clf.fit(scaler.transform(x_train), y_train)
    test_acc = clf.score(scaler.transform(x_test), y_test)

    # sklearn stores coefs as [in, out]; the handler wants nn.Linear's [out, in].
    ws = [c.T.astype(np.float64) for c in clf.coefs_]
    bs = [b.astype(np.float64) for b in clf.intercepts_]
    # Fold the scaler into layer 1.
    ws[0] = ws[0] / scaler.scale_[None, :]
    bs[0] = bs[0] - ws[0] @ scaler.mean_
    # Binary MLPClassifier has one logistic output; expand to two softmax logits [0, z] so that
    # softmax gives [1 - sigmoid(z), sigmoid(z)] = [P(malignant), P(benign)].
    if ws[-1].shape[0] == 1:
        ws[-1] = np.vstack([np.zeros_like(ws[-1]), ws[-1]])
        bs[-1] = np.concatenate([[0.0], bs[-1]])

    tensors, layers = {}, []
    for i, (w, b) in enumerate(zip(ws, bs)):
        name = f"fc{i + 1}"
        tensors[f"{name}.weight"] = np.ascontiguousarray(w, dtype=np.float32)
        tensors[f"{name}.bias"] = np.ascontiguousarray(b, dtype=np.float32)
        layers.append({"name": name, "out_features": int(w.shape[0]),
                       "activation": "relu" if i + 1 < len(ws) else "none"})
    save_file(tensors, os.path.join(out_dir, "model.safetensors"),
              metadata={"dataset": "sklearn.datasets.load_breast_cancer", "test_accuracy": f"{test_acc:.4f}"})
    config = {"model_type": "mlp", "input_dim": int(x.shape[1]), "layers": layers, "output": "softmax",
              "labels": [str(n) for n in data.target_names]}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")

    # Check the exported float32 model reproduces sklearn's probabilities on the test split.
    h = x_test.astype(np.float32)
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = h @ w.astype(np.float32).T + b.astype(np.float32)
        if i + 1 < len(ws):
            h = np.maximum(h, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    ref = clf.predict_proba(scaler.transform(x_test))
    max_diff = float(np.abs(probs - ref).max())
    assert max_diff < 1e-4, max_diff

    # Sample input: the held-out test rows (with their true label for checking), then planted bad rows.
    with open(sample_path, "w") as f:
        for i, (row, label) in enumerate(zip(x_test, y_test)):
            f.write(json.dumps({"id": f"test-{i:03d}", "features": [round(float(v), 6) for v in row],
                                "label": str(data.target_names[label])}) + "\n")
        good = [round(float(v), 6) for v in x_test[0]]
        f.write(json.dumps({"id": "bad-short", "features": good[:29], "label": "?"}) + "\n")
        f.write(json.dumps({"id": "bad-string", "features": good[:5] + ["n/a"] + good[6:], "label": "?"}) + "\n")
        f.write(json.dumps({"id": "bad-missing", "label": "?"}) + "\n")
        f.write(json.dumps({"id": "bad-null", "features": None, "label": "?"}) + "\n")
    print(f"test accuracy {test_acc:.4f} on {len(y_test)} rows; float32 export max |dp| {max_diff:.2e}; "
          f"wrote {out_dir} and {sample_path} ({len(y_test)} good + 4 bad rows)")


if __name__ == "__main__":
    main()
