"""gpuctl: GPU clusters with a working RDMA fabric on Alibaba Cloud and Tencent Cloud."""

__version__ = "0.1.0"
