"""X.509 dates of a PEM certificate, read without a crypto library (a client certificate
that has expired is reported as such instead of as a bare 401)."""


def certificate_dates(pem):
    """(notBefore, notAfter) in epoch seconds of the first certificate in PEM text, or None
    when it cannot be read (then the TLS layer reports the problem).  A minimal DER walk:
    Certificate > TBSCertificate > [version], serial, signature, issuer, validity."""
    import base64
    import re

    match = re.search(r"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", pem or "", re.S)
    if not match:
        return None
    try:
        der = base64.b64decode("".join(match.group(1).split()), validate=True)
        pos = _der(der, 0)[1]                      # into Certificate
        pos = _der(der, pos)[1]                    # into TBSCertificate
        if der[pos] == 0xA0:                       # [0] version
            pos = _der(der, pos)[2]
        for _ in range(3):                         # serial, signature algorithm, issuer
            pos = _der(der, pos)[2]
        pos = _der(der, pos)[1]                    # into Validity
        dates = []
        for _ in range(2):
            tag, start, end = _der(der, pos)
            text = der[start:end].decode("ascii")
            if tag == 0x17:                        # UTCTime: two-digit year
                text = ("19" if int(text[:2]) >= 50 else "20") + text
            dates.append(_epoch(text[:14]))
            pos = end
        return tuple(dates)
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _der(der, pos):
    """(tag, start of content, end of content) of the DER element at ``pos``."""
    tag, length, pos = der[pos], der[pos + 1], pos + 2
    if length & 0x80:
        count = length & 0x7F
        length, pos = int.from_bytes(der[pos:pos + count], "big"), pos + count
    return tag, pos, pos + length


def _epoch(text):
    """Epoch seconds of a UTC YYYYMMDDHHMMSS; ValueError when it is not one.  datetime, not
    time.strptime: strptime's first call imports and compiles its patterns (~1 ms a run)."""
    from datetime import datetime, timezone

    if len(text) != 14 or not text.isdigit():
        raise ValueError(text)
    month, day, hour, minute, second = (int(text[i:i + 2]) for i in range(4, 14, 2))
    return int(datetime(int(text[:4]), month, day, hour, minute, second, tzinfo=timezone.utc).timestamp())
