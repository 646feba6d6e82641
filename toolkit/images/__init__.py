"""Baked images: a node of a pool configured once, then kept, so that every node of the pool boots
with the GPU stack already installed and configure runs only the per-node work.

`store`: the records gpuctl keeps of the images it baked (one JSON file each, in the gpuctl home).
`build`: `gpuctl image build`, from a spec's pool to a record. Each provider makes and deletes the
image itself (the lab: toolkit/providers/lab/images.py).
"""
