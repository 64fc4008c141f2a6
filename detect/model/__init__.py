"""The detector: model formats, the output contract, batching and tf.distribute, model input decoding."""
