"""Decoders and encoders of Kafka's on-disk and text formats (pure Python, no Spark)."""
