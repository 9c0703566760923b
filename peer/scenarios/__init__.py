"""Incident scenarios, one module each; every module has ``NAME`` and ``run(ctx)``.

A module that sets ``EXCLUSIVE = True`` is built with the machine to itself (it waits for every
scenario build slot, :func:`peer.locks.all_slots_lock`): for scenarios whose tests compare clock
readings of the clusters (JmxTool samples, append times, pause times) to within a second or two.
"""
