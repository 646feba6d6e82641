"""Pulumi Automation API plumbing shared by the cloud drivers, one module per job:

- `driver.py`: `PulumiStackDriver`, what `up/status/outputs/down` do, and the extension points a
  cloud's driver supplies (toolkit/providers/alicloud/driver.py, tencentcloud/driver.py);
- `workspace.py`: the workspace's options, opening stacks, their config, every call mapped to a
  gpuctl error, and the refresh before a destroy (`StackWorkspace`, the driver's base);
- `storage.py`: the storage stack `<cluster>_storage` (`StorageStacks`);
- `leftovers.py`: the tag search, before the first create and after `down` (`TagSearch`);
- `backend.py`: the state backend URL and the passphrase;
- `cli.py`: the Pulumi CLI and its minimum version; `plugins.py`: the provider plugins;
- `pins.py`: the cluster id, creation time and owner pinned in the stack's config;
- `outputs.py`: stack outputs -> ClusterOutputs; `stack_state.py`: what a stack's state still holds;
- `progress.py`: engine events -> progress lines; `failure.py`: Automation API errors -> gpuctl errors.

(The package is named after what it drives; inside it, `import pulumi` is still Pulumi's own SDK:
imports are absolute.)
"""
