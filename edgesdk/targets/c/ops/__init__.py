"""The C target's op modules: per op type, its constraints here, its emitter and its kernels' footprints.

Each module registers itself with edgesdk.targets.c.emit (`@c_op`, `@footprint`); the registry imports them all.
"""
