"""A CPU-only model actor for ndif 0.1.2, selected with
NDIF_MODEL_IMPORT_PATH=ndif_cpu.actor.CPUModelActor (read in
ndif/services/ray/deployments/controller/controller.py ControllerDeploymentArgs).

Subclasses ndif's BaseModelDeployment and overrides only the methods that call
CUDA: load_from_disk (set_default_gpu / set_process_limits / torch.cuda.synchronize /
verify_device_placement), to_cache / from_cache (GPU<->CPU moves), cleanup
(torch.cuda.synchronize / empty_cache). run()/execute() are ndif's own; their
gpu_baselines/gpu_peaks already swallow CUDA errors.
"""
import gc
import logging
import os

import ray
import torch
from nnsight.modeling.huggingface import HuggingFaceModel

from ndif.services.ray.deployments.modeling.base import (
    KILL_REASON_PREEMPTED,
    BaseModelDeployment,
)

logger = logging.getLogger("ndif.modeling")


class CPUModelDeployment(BaseModelDeployment):
    # Weights already live in CPU RAM: "parking" is a no-op, so keep it cacheable.
    CACHEABLE = True

    def load_from_disk(self) -> HuggingFaceModel:
        torch.set_num_threads(int(os.environ.get("NDIF_CPU_TORCH_THREADS", "1")))
        # no device/device_map: the pipeline loads onto CPU
        model = HuggingFaceModel.from_model_key(
            self.model_key, dispatch=True, dtype=self.dtype_name, **self.kwargs
        )
        model._module.requires_grad_(False)
        logger.info(f"Loaded {self.model_key} on CPU")
        return model

    async def to_cache(self) -> None:
        await self.cancel(KILL_REASON_PREEMPTED)
        self.cached = True

    def from_cache(self, gpu_mem_bytes_by_id) -> None:
        self.gpu_mem_bytes_by_id = gpu_mem_bytes_by_id
        self.cached = False

    def cleanup(self) -> None:
        self.kill_switch.clear()
        self.kill_reason = None
        self.execution_ident = None
        self.model.interleaver.cancel()
        gc.collect()


@ray.remote(num_cpus=1, max_restarts=-1)
class CPUModelActor(CPUModelDeployment):
    pass
