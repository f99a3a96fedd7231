"""Writes a throw-away CA and a client certificate for Octavia: python3 -m ostest_shims.ca DIR

Why: Octavia reads its certificate settings ([certificates] ca_certificate,
ca_private_key; [controller_worker] client_ca; [haproxy_amphora]
client_cert, server_ca) even with the noop amphora driver, and signs a
certificate for every amphora it "creates". Nothing ever dials with them;
they are made anew for each new run directory and never leave it.
"""
import datetime
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _cert(subject, issuer, key, signer, ca):
    now = datetime.datetime.utcnow()
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(days=1))
         .not_valid_after(now + datetime.timedelta(days=3650))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    return b.sign(signer, hashes.SHA256())


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    pem = serialization.Encoding.PEM
    nokey = serialization.NoEncryption()
    pkcs8 = serialization.PrivateFormat.PKCS8
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ostest octavia CA")])
    ca = _cert(ca_name, ca_name, ca_key, ca_key, True)
    cl_key = ec.generate_private_key(ec.SECP256R1())
    cl = _cert(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ostest octavia controller")]),
               ca_name, cl_key, ca_key, False)
    old = os.umask(0o077)
    try:
        with open(os.path.join(d, "ca.pem"), "wb") as f:
            f.write(ca.public_bytes(pem))
        with open(os.path.join(d, "ca.key"), "wb") as f:
            f.write(ca_key.private_bytes(pem, pkcs8, nokey))
        with open(os.path.join(d, "client.pem"), "wb") as f:
            f.write(cl.public_bytes(pem) + cl_key.private_bytes(pem, pkcs8, nokey))
    finally:
        os.umask(old)


if __name__ == "__main__":
    main()
