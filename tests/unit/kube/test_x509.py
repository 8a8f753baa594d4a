"""kube/x509.py: the validity dates of a client certificate, read without a crypto library."""

import calendar
import time

import pytest

from kubectl_gpuisolate.kube import x509


@pytest.mark.parametrize("text", ["20261205001000", "19991231235959", "20000229120000", "20500101000000"])
def test_epoch_is_the_utc_time(text):
    assert x509._epoch(text) == calendar.timegm(time.strptime(text, "%Y%m%d%H%M%S"))


@pytest.mark.parametrize("text", ["20261305001000", "20260230000000", "2026120500100", "2026120500100Z",
                                  "20261205 01000", ""])
def test_epoch_refuses_what_is_not_a_time(text):
    with pytest.raises(ValueError):
        x509._epoch(text)


@pytest.mark.parametrize("pem", [None, "", "not a certificate",
                                 "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"])
def test_unreadable_certificate_has_no_dates(pem):
    assert x509.certificate_dates(pem) is None


# openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -days 3650 -subj /CN=x509-test
# (openssl x509 -noout -dates: notBefore=Dec  5 00:19:27 2026 GMT, notAfter=Dec  2 00:19:27 2036 GMT)
CERTIFICATE = """-----BEGIN CERTIFICATE-----
MIIBfTCCASOgAwIBAgIUGUIcpFtXRFfJxzUtT/9C0RBUfkcwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJeDUwOS10ZXN0MB4XDTI2MTIwNTAwMTkyN1oXDTM2MTIwMjAw
MTkyN1owFDESMBAGA1UEAwwJeDUwOS10ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEW7NbxLEvDoAMKb9wq3HVpTeRdCqoA+WfC/NfIYYTodWH4GnCXsrUinVF
Au9ZRfCYRXKOovLeP0wKWBFw/HKq8qNTMFEwHQYDVR0OBBYEFGV8l1k21dphYqkd
/nOKMwwtHHHIMB8GA1UdIwQYMBaAFGV8l1k21dphYqkd/nOKMwwtHHHIMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgLNmbpURrVuodikB7mr22/OM0
9No6KKoXui3PP4CL4TgCIQDMKbY8wxN/9lHsA0rnXHluCjtnx7BC5y6lukb0+LK4
hw==
-----END CERTIFICATE-----
"""


def test_dates_of_a_real_certificate_are_openssl_s():
    assert x509.certificate_dates("junk before\n" + CERTIFICATE) == (
        calendar.timegm((2026, 12, 5, 0, 19, 27)), calendar.timegm((2036, 12, 2, 0, 19, 27)))
