"""Training data: procedural scenes and their renders, image and video folders, aspect buckets, video I/O, text."""
