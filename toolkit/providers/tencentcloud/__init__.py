"""Tencent Cloud: the `gpuctl:tencentcloud:GpuCluster` Pulumi component (component, args, network,
instances) and its plan resources (plan). Nothing is imported here, so `import toolkit.providers.tencentcloud.args`
stays free of Pulumi."""
