"""The pure zone model shared by the agent and the consumer.

Nothing in this package performs I/O or imports gRPC, sysfs or Kubernetes client code; a test
keeps it that way.
"""
