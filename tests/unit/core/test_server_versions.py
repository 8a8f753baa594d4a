"""core/server_versions.py: the DRA version read from what the server serves, and the server's
release from ``GET /version``."""

import pytest

from kubectl_gpuisolate.core.server_versions import DRA_API_PREFERENCE, dra_api_version, git_version


@pytest.mark.parametrize("served, chosen", [
    (["v1beta1", "v1beta2", "v1"], "v1"), (["v1", "v1beta1"], "v1"), (["v1beta1", "v1beta2"], "v1beta2"),
    (["v1beta1"], "v1beta1"), (["v1alpha3"], None), ([], None), (iter(["v1beta2"]), "v1beta2")])
def test_claims_are_read_in_the_newest_version_served(served, chosen):
    assert dra_api_version(served) == chosen


def test_the_preference_is_newest_first():
    assert DRA_API_PREFERENCE == ("v1", "v1beta2", "v1beta1")


@pytest.mark.parametrize("info, release", [
    ({"gitVersion": "v1.33.5", "major": "1"}, "v1.33.5"), ({"gitVersion": ""}, ""),
    ({"gitVersion": None}, ""), ({"major": "1"}, ""), ({}, ""), (None, "")])
def test_git_version_is_the_release_or_empty(info, release):
    assert git_version(info) == release
