"""kube/yamlite.py against PyYAML: on every document it reads, the same data (types too), and on
every document PyYAML refuses, None.  Kubeconfigs as kubectl, the cloud CLIs and people write
them take the fast path; generated and mutated documents hold it to PyYAML."""

import random

import pytest
import yaml

from kubectl_gpuisolate.kube import yamlite


def same(a, b):
    """Equal and of the same types all the way down (True == 1 in Python, not in YAML)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        keys = sorted((type(k).__name__, repr(k)) for k in a)
        return keys == sorted((type(k).__name__, repr(k)) for k in b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def pyyaml(text):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return ValueError


KUBECTL = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
  name: kind-kind
- cluster:
    insecure-skip-tls-verify: true
    proxy-url: socks5://localhost:1080
    server: https://10.0.0.1
    tls-server-name: api.example
  name: lab
contexts:
- context:
    cluster: kind-kind
    namespace: gpu-operator
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
"""
EKS = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTg==
    server: https://ABCDEF.gr7.us-west-2.eks.amazonaws.com
  name: arn:aws:eks:us-west-2:111122223333:cluster/gpu
contexts:
- context:
    cluster: arn:aws:eks:us-west-2:111122223333:cluster/gpu
    user: arn:aws:eks:us-west-2:111122223333:cluster/gpu
  name: arn:aws:eks:us-west-2:111122223333:cluster/gpu
current-context: arn:aws:eks:us-west-2:111122223333:cluster/gpu
kind: Config
preferences: {}
users:
- name: arn:aws:eks:us-west-2:111122223333:cluster/gpu
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - us-west-2
      - eks
      - get-token
      - --cluster-name
      - gpu
      - --output
      - json
      command: aws
      env:
      - name: AWS_PROFILE
        value: prod
      interactiveMode: IfAvailable
      provideClusterInfo: false
"""
GKE_AKS_TOKEN = """\
---
# written by hand
apiVersion: v1
kind: Config
clusters:
  - name: gke
    cluster:
      server: "https://34.0.0.1"
      certificate-authority: ca.crt   # next to this file
  - name: aks
    cluster: {server: 'https://aks.example:443'}
contexts:
  - name: gke
    context: {cluster: gke, user: gke}
users:
  - name: gke
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1beta1
        command: gke-gcloud-auth-plugin
        installHint: 'Install gke-gcloud-auth-plugin for use with kubectl by following
          https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin'
        provideClusterInfo: true
  - name: openshift
    user:
      token: 'sha256~AbCdEf'
      as: "system:admin"
      as-groups: []
current-context: gke
"""
SIMPLE_OPENSHIFT = """\
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://api.ocp.example:6443
  name: api-ocp-example:6443
users:
- name: admin/api-ocp-example:6443
  user:
    token: sha256~AbCdEf-_gh
contexts:
- context:
    cluster: api-ocp-example:6443
    namespace: nvidia-gpu-operator
    user: admin/api-ocp-example:6443
  name: nvidia-gpu-operator/api-ocp-example:6443/admin
current-context: nvidia-gpu-operator/api-ocp-example:6443/admin
"""


@pytest.mark.parametrize("text", [KUBECTL, EKS, SIMPLE_OPENSHIFT], ids=["kubectl", "eks", "openshift"])
def test_kubeconfigs_as_written_take_the_fast_path(text):
    found = yamlite.load(text)
    assert found is not None and same(found, yaml.safe_load(text))


def test_a_document_outside_the_subset_is_left_to_pyyaml():
    # flow mappings other than {} and a quoted scalar on two lines
    assert yamlite.load(GKE_AKS_TOKEN) is None and isinstance(yaml.safe_load(GKE_AKS_TOKEN), dict)


@pytest.mark.parametrize("text", [
    "a: &x b\nc: *x\n",                  # anchors and aliases
    "a: !!str 1\n",                      # tags
    "a: |\n  b\n",                       # block scalars
    "a: >-\n  b\n",
    "a: b\n  c\n",                       # multi-line plain scalar
    "a: 'b\n  c'\n",                     # multi-line quoted scalar
    'a: "b\\tc"\n',                      # escapes
    "a: [b, c]\n",                       # flow sequences
    "a: 1\n", "a: 0x1f\n", "a: 1.5\n", "a: 2001-12-14\n", "a: .inf\n", "a: -.5\n", "a: 1:20\n",
    "a: <<\n", "<<: {}\n", "a: =\n",
    "a:\tb\n", "a: b\r\nc: d\r\n",       # tabs, CRLF
    "a: b\n---\nc: d\n",                 # two documents
    "a: b\n...\n", "--- a: b\n",
    "? a\n: b\n",                        # complex keys
    "'a': b\n", '"a": b\n',              # quoted keys
    "a: é\n",                            # not ASCII
    "- a\n- b\n", "a\n", "", "# only a comment\n", "  a: b\n",   # not a mapping at column 0
    "a: - b\n", "a: b: c\n", "a:b\n", "a: 'b' c\n", "a: b #c: d\n- e\n",
    "a:\n  - b\n  c: d\n",               # a sequence then a key at one column
    "a:\n    b: c\n  d: e\n",            # dedented to a column no block is at
    "a:\n- - b\n",                       # a sequence in a sequence's entry
    "a: @b\n", "a: `b\n", "a: %b\n", "a: ,b\n", "a: ?b\n", "a: :b\n", "a: #b\n",
])
def test_outside_the_subset(text):
    assert yamlite.load(text) is None


@pytest.mark.parametrize("text, expected", [
    ("a: yes\nb: Off\nc: ~\nd: NULL\ne:\nf: true\n",
     {"a": True, "b": False, "c": None, "d": None, "e": None, "f": True}),
    ("on: x\nnull: y\n", {True: "x", None: "y"}),               # YAML 1.1 keys too
    ("a: yesterday\nb: nothing\nc: offset\nd: --flag\ne: -x\n",
     {"a": "yesterday", "b": "nothing", "c": "offset", "d": "--flag", "e": "-x"}),
    ("a: 'it''s' # note\nb: \"q\\\"\\\\\"\nc: ''\n", {"a": "it's", "b": 'q"\\', "c": ""}),
    ("a: b c  # comment\nb: c#d\nc: http://x:1/#y\n", {"a": "b c", "b": "c#d", "c": "http://x:1/#y"}),
    ("k:\n- a\n-\n  - b\n- c: d\n  e: f\n-   g: h\n", {"k": ["a", ["b"], {"c": "d", "e": "f"}, {"g": "h"}]}),
    ("a:\n\n  # comment\n  b: {}\nc: []\n", {"a": {"b": {}}, "c": []}),
    ("a: b\na: c\n", {"a": "c"}),                                # the last of two keys, as PyYAML
    ("k:\n-\n- b\n", {"k": [None, "b"]}),                       # an empty entry, then the next
    ("---\na: b\n", {"a": "b"}),
])
def test_what_it_reads(text, expected):
    found = yamlite.load(text)
    assert same(found, expected) and same(found, yaml.safe_load(text))


# -- generated documents ---------------------------------------------------------------------------
WORDS = ["a", "kind-kind", "https://127.0.0.1:6443", "LS0tLS1CRUdJTg==", "yes", "no", "on", "Off", "true",
         "null", "~", "", " ", "1", "-1", "0x1f", "1.5", "1e3", ".inf", "2001-12-14", "1:20", "--region",
         "-", "- a", "a: b", "a:b", "a #b", "a#b", "#a", "it's", 'say "hi"', "back\\slash", "tab\tx",
         "<<", "=", "@at", "`tick", "%pct", "&anchor", "*alias", "!tag", "|", ">", "[a]", "{a: b}", "?",
         ":", ",", "a,b", "sha256~x", "arn:aws:eks:us-west-2:1:cluster/x", "é", "line\nbreak", " lead",
         "trail ", "a  b"]


PLAIN = ["a", "kind-kind", "https://127.0.0.1:6443", "LS0tLS1CRUdJTg==", "sha256~x", "--region", "",
         "arn:aws:eks:us-west-2:1:cluster/x", "yes", "no", "null", "it's", "a b", "1", True, False, None]


def value(rng, depth, words, keys):
    roll = rng.random()
    if depth > 3 or roll < 0.55:
        return rng.choice(words)
    if roll < 0.8:
        return {rng.choice(keys): value(rng, depth + 1, words, keys) for _ in range(rng.randint(0, 4))}
    return [value(rng, depth + 1, words, keys) for _ in range(rng.randint(0, 4))]


def documents(count, words, keys):
    rng = random.Random(20261205)
    for _ in range(count):
        data = {rng.choice(keys): value(rng, 0, words, keys) for _ in range(rng.randint(1, 5))}
        yield yaml.safe_dump(data, default_flow_style=False, sort_keys=rng.random() < 0.5,
                             indent=rng.choice((2, 4)), width=rng.choice((80, 10_000)))


@pytest.mark.parametrize("words, keys, share", [
    (WORDS + [True, False, None, 7, 1.5], [w for w in WORDS if "\n" not in w], 0.03),
    (PLAIN, PLAIN[:6], 0.4),
], ids=["tricky", "plain"])
def test_generated_documents_read_as_pyyaml_reads_them(words, keys, share):
    fast = 0
    for text in documents(3000, words, keys):
        found = yamlite.load(text)
        if found is not None:
            fast += 1
            assert same(found, yaml.safe_load(text)), text
    assert fast > 3000 * share      # the fast path is taken, not only refused


def mutations(rng, text):
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    line = lines[at]
    cut = rng.randint(0, len(line))
    choice = rng.randrange(6)
    if choice == 0:
        lines[at] = line[:cut] + rng.choice(["'", '"', "#", ": ", ":", "- ", " ", "\t", "{", "[", "&", "\\",
                                             "''", "yes", "1", "---"]) + line[cut:]
    elif choice == 1:
        lines[at] = line[:cut] + line[cut + 1:]
    elif choice == 2:
        lines[at] = " " * rng.randint(1, 3) + line
    elif choice == 3:
        lines[at] = line.lstrip(" ")
    elif choice == 4:
        lines.insert(at, lines[rng.randrange(len(lines))])
    else:
        del lines[at]
    return "\n".join(lines)


def test_mutated_kubeconfigs_read_as_pyyaml_reads_them_or_not_at_all():
    rng = random.Random(5)
    fast = 0
    for _ in range(4000):
        text = rng.choice([KUBECTL, EKS, SIMPLE_OPENSHIFT])
        for _ in range(rng.randint(1, 3)):
            text = mutations(rng, text)
        found = yamlite.load(text)
        if found is not None:
            fast += 1
            assert same(found, pyyaml(text)), text
    assert fast > 1000
