"""Accelerators: PyTorch's operators and the device's activity (torch.profiler / Kineto)
recorded with a cell and written into the same OTF2 trace and CUBE4 profile as Score-P's
CUDA adapter writes them.

- ``kineto_trace``: read a torch.profiler trace (Chrome trace JSON) into typed events;
- ``torch_session``: torch.profiler started and stopped with a measured run;
- ``device_recording`` + ``host_merge``: the trace into a Recording (operators nested
  under the Python function that called them, one DeviceStream per stream);
- ``import_trace``: a trace from outside the notebook as an experiment;
- ``scorep_cuda``: Score-P's own CUDA adapter under the Score-P backend.
"""
