"""core/hidden_gpu.py's readers whole, on their edges: an env entry without a value or a
container without a name, a valueFrom with nothing in it, a second variable after one not
visible-devices, an unread RuntimeClass, a hostPath without a path or with trailing slashes.
(hidden_gpu_cases.py holds the planner's cases of the same forms.)"""

from kubectl_gpuisolate.core import hidden_gpu
from kubectl_gpuisolate.core.hidden_gpu import Use


def with_env(*env, name="main"):
    container = {"env": list(env)}
    if name is not None:
        container["name"] = name
    return {"spec": {"containers": [container]}}


def test_every_visible_devices_variable_is_read_past_the_others():
    pod = with_env({"name": "PATH", "value": "/bin"}, {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                   {"name": "HOME", "value": "/"}, {"name": "ROCR_VISIBLE_DEVICES", "value": "0"})
    assert hidden_gpu.env_uses(pod) == [Use("NVIDIA_VISIBLE_DEVICES=all (container main)"),
                                        Use("ROCR_VISIBLE_DEVICES=0 (container main)")]


def test_a_nameless_container_is_named_with_a_question_mark():
    assert hidden_gpu.env_uses(with_env({"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}, name=None)) == \
        [Use("NVIDIA_VISIBLE_DEVICES=0 (container ?)")]


def test_an_entry_without_a_value_hands_no_devices():
    assert hidden_gpu.env_uses(with_env({"name": "NVIDIA_VISIBLE_DEVICES"})) == []
    assert hidden_gpu.env_uses(with_env({"name": "NVIDIA_VISIBLE_DEVICES", "value": " None "})) == []


def test_value_from_names_its_sources_or_says_value_from():
    refs = {"configMapKeyRef": {"name": "c", "key": "k"}, "fieldRef": {"fieldPath": "x"}}
    [use] = hidden_gpu.env_uses(with_env({"name": "HABANA_VISIBLE_DEVICES", "valueFrom": refs}))
    assert use == Use("HABANA_VISIBLE_DEVICES from configMapKeyRef, fieldRef (container main)",
                      note="HABANA_VISIBLE_DEVICES of container main comes from configMapKeyRef, fieldRef, "
                           "which is not read: kept as a GPU user")
    [use] = hidden_gpu.env_uses(with_env({"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": None}))
    assert use.what == "NVIDIA_VISIBLE_DEVICES from valueFrom (container main)"


def test_a_runtime_class_read_or_not():
    pod = {"spec": {"runtimeClassName": "nvidia-cdi"}}
    assert hidden_gpu.runtime_uses(pod, {}) == [Use("RuntimeClass nvidia-cdi")]
    assert hidden_gpu.runtime_uses(pod, None) == [Use(
        "RuntimeClass nvidia-cdi", note="RuntimeClass nvidia-cdi could not be read: judged by its name, "
                                        "a GPU runtime")]
    assert hidden_gpu.runtime_uses(pod, {"nvidia-cdi": "runc"}) == []
    assert hidden_gpu.uses(pod) == hidden_gpu.runtime_uses(pod, None)     # not read by default
    assert hidden_gpu.uses(pod, {"nvidia-cdi": "nvidia"}) == [Use("RuntimeClass nvidia-cdi (handler nvidia)")]


def test_host_paths_are_judged_without_their_trailing_slashes():
    volumes = [{"name": "a", "hostPath": {"path": "/dev/dri//"}}, {"name": "b", "hostPath": {}},
               {"name": "c", "emptyDir": {}}, {"name": "d", "hostPath": {"path": "/dev/nvidia0/"}}]
    assert hidden_gpu.device_mount_uses({"spec": {"volumes": volumes}}) == [
        Use("the DRI (Intel/AMD) device /dev/dri (a hostPath volume)"),
        Use("the NVIDIA device /dev/nvidia0 (a hostPath volume)")]
    assert hidden_gpu.device_mount_uses({"spec": {"volumes": [{"hostPath": {"path": "/"}}]}}) == []
