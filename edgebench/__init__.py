"""edgebench: how fast, how power-hungry and how accurate a DNN is on an edge device.

Importing this package imports no heavy framework (torch, onnxruntime, tensorrt, pynvml, jtop);
each is imported lazily by the stage that needs it.
"""

__version__ = "0.1.0"
