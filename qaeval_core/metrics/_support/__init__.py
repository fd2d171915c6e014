"""What the metric families share but is not a metric: model loading by path or hub name
(:mod:`.loading`), the persistent embedding cache (:mod:`.embed_cache`), SQuAD text
normalisation and its fingerprints (:mod:`.text`, :mod:`.normalize`, :mod:`.fingerprint`),
offline WordNet (:mod:`.wordnet`), numbers and units as answers write them
(:mod:`.quantities`), the local/remote LLM backend (:mod:`.llm_backend`) and SMILE's
synthetic answers (:mod:`.synth`). Private to :mod:`qaeval_core.metrics`."""
