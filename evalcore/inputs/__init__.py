"""A run's inputs: corpus folders and their extraction, ground truth, uploads, question sets, the demo."""
