"""Randomly initialised pyannote speaker-diarization pipelines, saved as pyannote saves them.

Where no pyannote weights can be downloaded (this project's machines, its tests, the GPU benchmark
``scripts/bench_gpu.py``), :func:`write_random_pipeline` writes a pipeline directory of pyannote's
own architectures with random weights: a PyanNet segmentation model with the powerset
specification of ``pyannote/segmentation-3.0`` (3 speakers per chunk, at most 2 at once, 10 s
chunks), the embedding model given, a random PLDA, and a ``config.yaml`` with the layout of
``pyannote/speaker-diarization-community-1``. It loads through
:class:`voicekit.diarization.pyannote_backend.PyannoteModels` like the real one. Such a pipeline
exercises loading, shapes, timings and speed, never accuracy.

Needs pyannote.audio (docs/pyannote.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voicekit.diarization.pyannote_backend import import_pyannote

SEGMENTATION_SIZES = {
    # cheap on two CPU cores: what the tests load
    "small": {"lstm": {"hidden_size": 32, "num_layers": 1}, "linear": {"hidden_size": 32, "num_layers": 1}},
    # pyannote/segmentation-3.0's hyper-parameters (1.47 M parameters; SincNet stride 10)
    "full": {"lstm": {"hidden_size": 128, "num_layers": 4, "bidirectional": True, "monolithic": True, "dropout": 0.5},
             "linear": {"hidden_size": 128, "num_layers": 2}},
}
"""PyanNet sizes for :func:`write_random_pipeline`."""

LDA_DIMENSION = 128
"""Dimension of the random PLDA's LDA projection (community-1's)."""


def save_checkpoint(model, path: str | Path) -> None:
    """Save a pyannote model as pyannote does (``models/embedding/wespeaker/convert.py``), with its
    hyper-parameters, so that ``Model.from_pretrained`` rebuilds the architecture as saved.

    Args:
        model: a ``pyannote.audio.Model`` whose ``specifications`` are set.
        path: the ``pytorch_model.bin`` to write (its folders are created).
    """
    import lightning
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint = {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}
    model.on_save_checkpoint(checkpoint)
    checkpoint["pytorch-lightning_version"] = lightning.__version__
    torch.save(checkpoint, path)


def write_random_pipeline(root: str | Path, embedding_model, plda: bool = True, segmentation: str = "small") -> Path:
    """Write a speaker-diarization pipeline directory with random weights.

    The segmentation model is built with torch's generator seeded 0 (inside ``torch.random.fork_rng``,
    so the caller's random state is left as it was); the embedding model is the caller's (seed it
    before building it for reproducible weights).

    Args:
        root: the directory to write (``config.yaml``, ``segmentation/``, ``embedding/``, ``plda/``).
        embedding_model: a ``pyannote.audio`` embedding model, e.g. ``WeSpeakerResNet34()``
            (community-1's, 256-d) or ``XVectorSincNet()`` (512-d, cheap on CPU).
        plda: write ``plda/`` (``xvec_transform.npz``, ``plda.npz``); without it the config still
            names ``$model/plda``, the trap that pyannote takes a missing path for a hub name.
        segmentation: a key of :data:`SEGMENTATION_SIZES`.

    Returns:
        ``root`` as a Path.

    Raises:
        ValueError: for an unknown ``segmentation`` size.
        voicekit.models.ModelError: when pyannote.audio is not installed.
    """
    if segmentation not in SEGMENTATION_SIZES:
        raise ValueError(f"segmentation size {segmentation!r}: use one of {', '.join(SEGMENTATION_SIZES)}")
    pyannote_audio = import_pyannote()
    import torch
    import yaml
    from pyannote.audio.core.task import Problem, Resolution, Specifications
    from pyannote.audio.models.segmentation import PyanNet

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng(devices=[]):  # seeded weights without touching the caller's generator
        torch.manual_seed(0)
        seg = PyanNet(**SEGMENTATION_SIZES[segmentation])
        seg.specifications = Specifications(  # as pyannote/segmentation-3.0: powerset, 3 speakers, 2 at once
            problem=Problem.MONO_LABEL_CLASSIFICATION, resolution=Resolution.FRAME, duration=10.0,
            min_duration=10.0, classes=["speaker#1", "speaker#2", "speaker#3"], powerset_max_classes=2,
            permutation_invariant=True)
        seg.build()
    save_checkpoint(seg, root / "segmentation" / "pytorch_model.bin")
    embedding_model.specifications = Specifications(problem=Problem.REPRESENTATION,
                                                    resolution=Resolution.CHUNK, duration=5.0)
    save_checkpoint(embedding_model, root / "embedding" / "pytorch_model.bin")
    dim, lda = embedding_model.dimension, LDA_DIMENSION
    rng = np.random.default_rng(0)
    if plda:
        (root / "plda").mkdir(exist_ok=True)
        np.savez(root / "plda" / "xvec_transform.npz", mean1=rng.normal(size=dim) * 0.01,
                 mean2=rng.normal(size=lda) * 0.01, lda=np.linalg.qr(rng.normal(size=(dim, dim)))[0][:, :lda])
        np.savez(root / "plda" / "plda.npz", mu=np.zeros(lda), tr=np.linalg.qr(rng.normal(size=(lda, lda)))[0],
                 psi=np.sort(rng.uniform(0.5, 5.0, lda))[::-1].copy())
    config = {  # the layout of pyannote/speaker-diarization-community-1's config.yaml
        "dependencies": {"pyannote.audio": pyannote_audio.__version__},
        "pipeline": {"name": "pyannote.audio.pipelines.SpeakerDiarization", "params": {
            "clustering": "VBxClustering", "segmentation": "$model/segmentation", "embedding": "$model/embedding",
            "plda": "$model/plda", "embedding_batch_size": 16, "segmentation_batch_size": 16,
            "embedding_exclude_overlap": True}},
        "params": {"clustering": {"threshold": 0.6, "Fa": 0.07, "Fb": 0.8}, "segmentation": {"min_duration_off": 0.0}},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root
