"""Node selectors as the scheduler evaluates them: a pod's ``nodeSelector``, its required
``nodeAffinity`` and a PersistentVolume's ``nodeAffinity``, matched against a node, and said
in one line for people.

Pure.  The rules are the API's (k8s.io/component-helpers nodeaffinity):
- a NodeSelector's terms are ORed; a term's matchExpressions and matchFields are ANDed; a term
  with neither matches no node, and so does a selector with no terms;
- In and NotIn compare the label's value with the list; NotIn and DoesNotExist also hold when
  the label is absent; Gt and Lt compare integers, and fail when the label is absent or either
  side is not an integer;
- matchFields knows only ``metadata.name``, with In and NotIn;
- a PersistentVolume's nodeAffinity is matched against the node's labels alone
  (k8s.io/component-helpers storage/volume CheckNodeAffinity), and a node without fields skips
  matchFields: so a PV's matchFields never rule a node out, and a term of matchFields only
  matches every node.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

Obj = Dict[str, Any]


def _integer(text: Any) -> Optional[int]:
    try:
        return int(str(text))
    except ValueError:
        return None


def expression_holds(expression: Mapping[str, Any], value: Optional[str]) -> bool:
    """One requirement against one label's value (None when the node lacks the label)."""
    operator = expression.get("operator")
    values = [str(v) for v in expression.get("values") or ()]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _integer(value), _integer(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def node_labels(node: Obj) -> Dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def node_name(node: Obj) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def field_holds(expression: Mapping[str, Any], node: Obj) -> bool:
    if expression.get("key") != "metadata.name" or expression.get("operator") not in ("In", "NotIn"):
        return False
    return expression_holds(expression, node_name(node))


def term_holds(term: Mapping[str, Any], node: Obj, with_fields: bool = True) -> bool:
    """One term; ``with_fields`` False skips its matchFields (as for a PV's nodeAffinity)."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = node_labels(node)
    return (all(expression_holds(e, labels.get(e.get("key", ""))) for e in expressions)
            and (not with_fields or all(field_holds(f, node) for f in fields)))


def selector_holds(selector: Optional[Mapping[str, Any]], node: Obj, with_fields: bool = True
                   ) -> bool:
    """A NodeSelector (``{nodeSelectorTerms: [...]}``); None means no constraint."""
    if selector is None:
        return True
    return any(term_holds(t, node, with_fields) for t in selector.get("nodeSelectorTerms") or ())


def node_selector_holds(node_selector: Optional[Mapping[str, str]], node: Obj) -> bool:
    labels = node_labels(node)
    return all(labels.get(k) == v for k, v in (node_selector or {}).items())


def required_affinity(pod_spec: Mapping[str, Any]) -> Optional[Obj]:
    """The pod's requiredDuringSchedulingIgnoredDuringExecution NodeSelector, or None."""
    affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    return affinity.get("requiredDuringSchedulingIgnoredDuringExecution")


def pv_affinity(pv: Mapping[str, Any]) -> Optional[Obj]:
    return ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")


def pv_affinity_holds(pv: Mapping[str, Any], node: Obj) -> bool:
    """A PersistentVolume's nodeAffinity on a node, as the scheduler's VolumeBinding checks it:
    on the node's labels only, so its matchFields are skipped."""
    return selector_holds(pv_affinity(pv), node, with_fields=False)


def describe_expression(expression: Mapping[str, Any]) -> str:
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values = [str(v) for v in expression.get("values") or ()]
    if operator in ("Exists", "DoesNotExist"):
        return f"{key} {operator}"
    if operator in ("Gt", "Lt"):
        return f"{key} {operator} {values[0] if values else ''}".rstrip()
    return f"{key} {operator} [{', '.join(values)}]"


def describe_term(term: Mapping[str, Any]) -> str:
    parts = [describe_expression(e) for e in term.get("matchExpressions") or ()]
    parts += [describe_expression(f) for f in term.get("matchFields") or ()]
    return ", ".join(parts) or "an empty term"


def describe_selector(selector: Mapping[str, Any]) -> str:
    terms: Sequence[Mapping[str, Any]] = selector.get("nodeSelectorTerms") or ()
    return " or ".join(f"({describe_term(t)})" if len(terms) > 1 else describe_term(t)
                       for t in terms) or "no terms"


def selector_keys(selector: Optional[Mapping[str, Any]]) -> List[str]:
    keys: List[str] = []
    for term in (selector or {}).get("nodeSelectorTerms") or ():
        keys += [str(e.get("key", "")) for e in term.get("matchExpressions") or ()]
    return keys


def selector_values(selector: Optional[Mapping[str, Any]], key_test: Any) -> List[str]:
    """The In values of the expressions whose key passes ``key_test`` (e.g. the zones)."""
    found: List[str] = []
    for term in (selector or {}).get("nodeSelectorTerms") or ():
        for expression in term.get("matchExpressions") or ():
            if key_test(str(expression.get("key", ""))) and expression.get("operator") == "In":
                found += [str(v) for v in expression.get("values") or () if str(v) not in found]
    return found
