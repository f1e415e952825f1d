"""Every signature and KEM enabled in liboqs, through liboqs-python."""
from __future__ import annotations

import functools

from ..algorithms import Algorithm, register
from ..liboqs_loader import import_oqs
from ..schema import family_of


@functools.lru_cache(maxsize=1)
def _info() -> tuple[str, str, str]:
    """The loaded liboqs: its release, options and build id."""
    from ..liboqs_loader import liboqs_info

    info = liboqs_info()
    return info["liboqs_version"], info["options"], info["build"]


class OqsSignature(Algorithm):
    def __init__(self, name: str) -> None:
        oqs = import_oqs()
        with oqs.Signature(name) as probe:
            details = probe.details
        version, options, build = _info()
        super().__init__(name, "sig", family_of(name), "liboqs", f"liboqs {version} ({options} build)",
                         version, details.get("claimed_nist_level"),
                         extra={"build": build, "max_signature_bytes": details["length_signature"],
                                "euf_cma": details.get("is_euf_cma")})
        self._oqs = oqs

    def generate(self):
        with self._oqs.Signature(self.name) as s:
            pk = s.generate_keypair()
            return pk, s.export_secret_key()

    def signer(self, sk):
        return self._oqs.Signature(self.name, sk).sign

    def verifier(self, pk):
        return functools.partial(_oqs_verify, self._oqs.Signature(self.name), pk)

    def declared_sizes(self) -> dict:
        return {"signature_max_bytes": self.extra["max_signature_bytes"]}


def _oqs_verify(sig_obj, pk: bytes, message: bytes, signature: bytes) -> bool:
    return sig_obj.verify(message, signature, pk)


class OqsKem(Algorithm):
    def __init__(self, name: str) -> None:
        oqs = import_oqs()
        with oqs.KeyEncapsulation(name) as probe:
            details = probe.details
        version, options, build = _info()
        super().__init__(name, "kem", family_of(name), "liboqs", f"liboqs {version} ({options} build)",
                         version, details.get("claimed_nist_level"), extra={"build": build})
        self._oqs = oqs

    def generate(self):
        with self._oqs.KeyEncapsulation(self.name) as k:
            pk = k.generate_keypair()
            return pk, k.export_secret_key()

    def encapsulator(self, pk):
        return functools.partial(self._oqs.KeyEncapsulation(self.name).encap_secret, pk)

    def decapsulator(self, sk):
        return self._oqs.KeyEncapsulation(self.name, sk).decap_secret


def register_all() -> None:
    oqs = import_oqs()
    for name in oqs.get_enabled_sig_mechanisms():
        register(name, "liboqs", functools.partial(OqsSignature, name))
    for name in oqs.get_enabled_kem_mechanisms():
        register(name, "liboqs", functools.partial(OqsKem, name))
