"""output/evacuate.py's sentences for the fit check (core.resources.Shortfall) and the
replacements the scheduler marks Unschedulable."""

from fractions import Fraction

import pytest

from kubectl_gpuisolate.core.resources import EACH, SET, UNION, Shortfall
from kubectl_gpuisolate.evacuation.replacements import Replacement
from kubectl_gpuisolate.output.evacuate import fit_warning, unschedulable_line

GI, MI = 2 ** 30, 2 ** 20
NODES = ("cpu-1", "cpu-2", "cpu-3", "cpu-4", "cpu-5")


@pytest.mark.parametrize("shortfall, sentence", [
    (Shortfall("cpu", 12, Fraction(19, 2), Fraction(16, 5), NODES[:2]),
     "12 pods need 9.5 CPU; their landing nodes have 3.2 free (cpu-1, cpu-2); some replacements "
     "may stay Pending"),
    (Shortfall("cpu", 1, Fraction(2), Fraction(1), NODES[:1], SET),
     "1 pod needs 2.0 CPU; its landing node has 1.0 free (cpu-1); some replacements may stay Pending"),
    # close amounts get the digits that tell them apart
    (Shortfall("cpu", 3, Fraction(1001, 1000), Fraction(1), NODES[:5]),
     "3 pods need 1.001 CPU; their landing nodes have 1.000 free (cpu-1, cpu-2, cpu-3 and 2 more); "
     "some replacements may stay Pending"),
    (Shortfall("memory", 2, Fraction(3 * GI), Fraction(512 * MI), NODES[:1]),
     "2 pods need 3.0 GiB of memory; their landing node has 512.0 MiB free (cpu-1); some "
     "replacements may stay Pending"),
    (Shortfall("cpu", 20, Fraction(40), Fraction(30), NODES[:4], UNION),
     "together, the 20 pods that move need 40.0 CPU; all their landing nodes have 30.0 free (cpu-1, "
     "cpu-2, cpu-3 and 1 more); some replacements may stay Pending"),
    (Shortfall("cpu", 1, Fraction(17), Fraction(151, 10), NODES[1:2], EACH),
     "a pod needs 17.0 CPU; the landing node with the most free has 15.1 (cpu-2); its replacement "
     "will stay Pending"),
    (Shortfall("memory", 3, Fraction(80 * GI), Fraction(60 * GI), NODES[:1], EACH),
     "pods need 80.0 GiB of memory (the largest of 3 that fit on none); the landing node with the "
     "most free has 60.0 GiB (cpu-1); their replacements will stay Pending"),
])
def test_fit_sentences(shortfall, sentence):
    assert fit_warning(shortfall) == sentence


def test_the_unschedulable_sentence_carries_the_schedulers_message():
    found = Replacement("gpu-1", "apps/web-x", "ReplicaSet/web", "0/9 nodes are available: ...")
    assert unschedulable_line(found) == ("replacement apps/web-x of ReplicaSet/web is Unschedulable: "
                                         "0/9 nodes are available: ...")
