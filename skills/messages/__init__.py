"""Inputs and outputs of the workflows and activities, one model per call, a module per workflow family.

One input object per workflow or activity, so fields can be added later without breaking callers or
running histories. They live here, apart from the code that handles them, so the client and the
workflows can use them without importing the worker's dependencies.
"""
