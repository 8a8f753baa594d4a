"""output/tables.py: Go's %v, kubectl's tabwriter, the seed's node view (byte for byte), tables."""

import io
import json
import re

import pytest
import yaml

from kubectl_gpuisolate.output import tables as output

from ..factories import CONTROL_PLANE_TAINT, GPU_A, GPU_B, GPU_TAINT, node


@pytest.mark.parametrize("value, expected", [
    ("true", "true"),
    ("", ""),
    (True, "true"),
    (False, "false"),
    (None, "<nil>"),
    (3, "3"),
    (2.0, "2"),
    (1.5, "1.5"),
    ([], "[]"),
    ({}, "map[]"),
    (["a", "b"], "[a b]"),
    ({"value": "true", "key": "nvidia.com/gpu", "effect": "NoSchedule"},
     "map[effect:NoSchedule key:nvidia.com/gpu value:true]"),
    ({"b": {"d": 1, "c": [1, 2]}, "a": None}, "map[a:<nil> b:map[c:[1 2] d:1]]"),
    ([{"z": True}, {"y": False}], "[map[z:true] map[y:false]]"),
    ({"timeAdded": "2025-01-01T00:00:00Z", "key": "k", "effect": "NoExecute"},
     "map[effect:NoExecute key:k timeAdded:2025-01-01T00:00:00Z]"),
    ({"B": 1, "a": 2}, "map[B:1 a:2]"),
], ids=["string", "empty-string", "true", "false", "none", "int", "whole-float", "float",
        "empty-list", "empty-map", "list", "taint-sorted", "nested", "list-of-maps",
        "time-added-sorted", "byte-order-keys"])
def test_go_format(value, expected):
    assert output.go_format(value) == expected


# kubectl's printers.GetNewTabWriter (k8s.io/cli-runtime): minwidth 6, tabwidth 4, padding 3.
@pytest.mark.parametrize("rows, expected", [
    ([], ""),
    ([["a"]], "a\n"),
    ([["a", "b"]], "a     b\n"),
    ([["NAME", "X"], ["n1", "y"]], "NAME   X\nn1     y\n"),
    ([["abc", "x"]], "abc   x\n"),
    ([["abcd", "x"]], "abcd   x\n"),
    ([["a", "b", "c"], ["aaaaaaaaaaaa", "b", "long last cell"]],
     "a              b     c\naaaaaaaaaaaa   b     long last cell\n"),
    ([["a", ""], ["b", "c"]], "a     \nb     c\n"),
], ids=["empty", "one-cell", "minwidth-6", "two-rows", "exactly-minwidth", "padding-3",
        "last-column-unpadded", "empty-last-cell"])
def test_tabwriter(rows, expected):
    assert output.tabwriter(rows) == expected


def test_tabwriter_custom_widths():
    assert output.tabwriter([["ab", "c"]], minwidth=0, padding=1) == "ab c\n"
    assert output.tabwriter([["ab", "c"]], minwidth=6, padding=1) == "ab    c\n"
    assert output.tabwriter([["ab", "c"]], minwidth=10, padding=3) == "ab        c\n"


CPU_1 = "nkpnai-md-0-xqwvn-zlrmk-62gc2"
CP_1 = "nkpnai-vvzvd-cctr2"
GPU_LABELS = {"nvidia.com/gpu.present": "true"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
               "timeAdded": "2025-01-01T00:00:00Z"}
PRESENT_FALSE = {"nvidia.com/gpu.present": "false"}

# Every expected string below is byte-identical to what kubectl v1.32 prints for the same
# nodes with -o custom-columns=NAME:.metadata.name,GPU_PRESENT:...,TAINTS:.spec.taints
NODE_VIEW_CASES = [
    ([node(GPU_A, labels=GPU_LABELS, taints=[GPU_TAINT])],
     "NAME                                 GPU_PRESENT   TAINTS\n"
     "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm   true          "
     "[map[effect:NoSchedule key:nvidia.com/gpu value:true]]\n",
     "gpu-label-and-taint"),
    ([node(GPU_A, labels=GPU_LABELS)],
     "NAME                                 GPU_PRESENT   TAINTS\n"
     "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm   true          <none>\n",
     "no-taints"),
    ([node(CPU_1)],
     "NAME                            GPU_PRESENT   TAINTS\n"
     "nkpnai-md-0-xqwvn-zlrmk-62gc2   <none>        <none>\n",
     "no-label-no-taints"),
    ([node(CP_1, taints=[CONTROL_PLANE_TAINT])],
     "NAME                 GPU_PRESENT   TAINTS\n"
     "nkpnai-vvzvd-cctr2   <none>        "
     "[map[effect:NoSchedule key:node-role.kubernetes.io/control-plane]]\n",
     "taint-without-value"),
    ([node(GPU_B, labels=GPU_LABELS, taints=[CONTROL_PLANE_TAINT, GPU_TAINT])],
     "NAME                                 GPU_PRESENT   TAINTS\n"
     "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9   true          "
     "[map[effect:NoSchedule key:node-role.kubernetes.io/control-plane] "
     "map[effect:NoSchedule key:nvidia.com/gpu value:true]]\n",
     "several-taints"),
    ([node(GPU_B, labels=GPU_LABELS, taints=[UNREACHABLE])],
     "NAME                                 GPU_PRESENT   TAINTS\n"
     "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9   true          "
     "[map[effect:NoExecute key:node.kubernetes.io/unreachable timeAdded:2025-01-01T00:00:00Z]]\n",
     "taint-with-time-added"),
    ([node("n1", labels=PRESENT_FALSE)],
     "NAME   GPU_PRESENT   TAINTS\n"
     "n1     false         <none>\n",
     "short-name-minwidth"),
    # Captured from kubectl v1.32 against these nodes (short names: minwidth 6, not 10).
    ([node("n1", labels=GPU_LABELS, taints=[GPU_TAINT]), node("gpu-2", labels=PRESENT_FALSE),
      node("cp", taints=[CONTROL_PLANE_TAINT, UNREACHABLE])],
     "NAME    GPU_PRESENT   TAINTS\n"
     "n1      true          [map[effect:NoSchedule key:nvidia.com/gpu value:true]]\n"
     "gpu-2   false         <none>\n"
     "cp      <none>        [map[effect:NoSchedule key:node-role.kubernetes.io/control-plane] "
     "map[effect:NoExecute key:node.kubernetes.io/unreachable timeAdded:2025-01-01T00:00:00Z]]\n",
     "kubectl-1.32-short-names"),
    ([node(GPU_A, labels=GPU_LABELS), node(GPU_B, labels=GPU_LABELS, taints=[GPU_TAINT]),
      node(CPU_1), node(CP_1, taints=[CONTROL_PLANE_TAINT])],
     "NAME                                 GPU_PRESENT   TAINTS\n"
     "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm   true          <none>\n"
     "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9   true          "
     "[map[effect:NoSchedule key:nvidia.com/gpu value:true]]\n"
     "nkpnai-md-0-xqwvn-zlrmk-62gc2        <none>        <none>\n"
     "nkpnai-vvzvd-cctr2                   <none>        "
     "[map[effect:NoSchedule key:node-role.kubernetes.io/control-plane]]\n",
     "seed-mixed"),
    ([], "NAME   GPU_PRESENT   TAINTS\n", "no-nodes"),
]


@pytest.mark.parametrize("nodes, expected", [c[:2] for c in NODE_VIEW_CASES],
                         ids=[c[2] for c in NODE_VIEW_CASES])
def test_node_view(nodes, expected):
    assert output.node_view(nodes) == expected


def test_node_view_empty_taint_list():
    # kubectl would print "[]" for an explicit empty list, but the API server never sends one
    # (taints is omitempty), so the plugin's "<none>" cannot differ in practice.
    assert output.node_view([node(GPU_A, labels=GPU_LABELS, taints=[])]) == (
        "NAME                                 GPU_PRESENT   TAINTS\n"
        "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm   true          <none>\n")


def test_node_view_labels_null_and_no_spec():
    bare = {"metadata": {"name": "n1", "labels": None}}
    assert output.node_view([bare]) == ("NAME   GPU_PRESENT   TAINTS\n"
                                        "n1     <none>        <none>\n")


@pytest.mark.parametrize("headers, rows, expected", [
    (["namespace", "pod"], [["default", "web"], ["kube-system", "x"]],
     "NAMESPACE    POD\ndefault      web\nkube-system  x\n"),
    (["a", "b"], [["x", 1], ["yy", 22]], "A    B\nx    1\nyy   22\n"),
    (["a", "b"], [["x", ""]], "A    B\nx\n"),
    (["a"], [], ""),
    (["a", "b"], [["007", "1e3"]], "A    B\n007  1e3\n"),
], ids=["upper-case-headers", "numbers-as-text", "no-trailing-spaces", "no-rows",
        "no-number-parsing"])
def test_table(headers, rows, expected):
    assert output.table(headers, rows) == expected


DOC = {"schemaVersion": "gpuisolate.status/v1", "nodes": [{"name": "n1", "gpuCount": 2,
                                                          "taints": [], "gpuPresent": None}],
       "warnings": []}


def test_document_json():
    text = output.document(DOC, "json")
    assert text.endswith("}\n")
    assert json.loads(text) == DOC
    assert text.splitlines()[1] == '  "schemaVersion": "gpuisolate.status/v1",'


def test_document_yaml():
    text = output.document(DOC, "yaml")
    assert yaml.safe_load(text) == DOC
    assert text.splitlines()[0] == "schemaVersion: gpuisolate.status/v1"  # key order kept
    assert "gpuPresent: null" in text


@pytest.mark.parametrize("quiet, pattern", [
    (False, r"^\[ +\d+\.\ds\] evicting default/web\n$"),
    (True, r"^$"),
], ids=["progress", "quiet"])
def test_progress(quiet, pattern):
    stream = io.StringIO()
    output.Progress(stream, quiet=quiet)("evicting default/web")
    assert re.match(pattern, stream.getvalue())


def test_warn():
    stream = io.StringIO()
    output.warn("node n1 is cordoned", stream)
    assert stream.getvalue() == "Warning: node n1 is cordoned\n"
