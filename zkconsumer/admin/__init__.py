"""zkconsumer.admin: the operator's library over /consumers groups (what the CLI stands on).

So far: `verdicts`, the pure lag and ownership judgement of a group's partitions.
"""
