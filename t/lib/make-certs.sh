#!/bin/sh
# Makes a fresh certificate set in DIR with the openssl CLI (OpenSSL 3.0):
#   ca            root CA                      inter      intermediate, signed by ca
#   leaf          SANs abc.example.com, spiffe://abc.example.com/test-identity,
#                 other.example.com; signed by inter (chain: leaf-chain.crt)
#   spiffe        URI SAN spiffe://abc.example.com/test-identity only; by inter
#   wrongsan      SAN wrong.example.com; by inter
#   expired       SAN abc.example.com, validity in the past; by inter
#   notyet        SAN abc.example.com, validity in the future; by inter
#   wildcard      SAN *.example.com; by inter
#   ipemail       SANs IP 127.0.0.1, email ops@example.com; by inter
#   forged        SANs forged.example.com and a DNS name holding CR, LF, a
#                 quote and a whole forged error-log line; by inter
#   selfsigned    SAN abc.example.com, its own issuer
#   unrelated-ca  another root; untrusted signed by it (SAN abc.example.com)
#   twin-ca       another root named as ca is (CN=ca); twinsigned signed by it
#                 (SAN abc.example.com, no authority key id): its chain finds
#                 ca by name and fails on the signature
# Leaves last $GTLS_CERT_DAYS days (default 365).
# Each server certificate NAME has NAME.crt (leaf then intermediate where
# there is one), NAME.key, and NAME.leaf.crt (the leaf alone).
set -eu

dir=${1:?usage: make-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

cat > ca.cnf <<'EOF'
[ ca ]
default_ca = this
[ this ]
dir = .
database = $dir/index-$ENV::CA_NAME.txt
new_certs_dir = $dir/newcerts
serial = $dir/serial
default_md = sha256
policy = anything
copy_extensions = none
unique_subject = no
[ anything ]
commonName = supplied
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = unused
[ v3_ca ]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[ v3_leaf ]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = $ENV::SAN
[ v3_leaf_no_akid ]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = $ENV::SAN
authorityKeyIdentifier = none
EOF
mkdir -p newcerts
[ -f serial ] || echo 1000 > serial

# sign NAME ISSUER EXTENSION SAN [START END]
sign() {
    name=$1 issuer=$2 ext=$3
    export SAN=$4 CA_NAME=$issuer
    touch "index-$issuer.txt"
    openssl req -new -key "$name.key" -subj "/CN=$name" -out "$name.csr" 2>/dev/null
    dates="-days ${GTLS_CERT_DAYS:-365}"
    [ $# -ge 6 ] && dates="-startdate $5 -enddate $6"
    # shellcheck disable=SC2086
    openssl ca -batch -config ca.cnf -notext -extensions "$ext" $dates \
        -cert "$issuer.leaf.crt" -keyfile "$issuer.key" \
        -in "$name.csr" -out "$name.leaf.crt" 2>/dev/null
    rm -f "$name.csr"
}

root() {
    key "$1"
    export SAN=DNS:unused CA_NAME=$1
    openssl req -x509 -new -key "$1.key" -subj "/CN=$1" -days 3650 \
        -config ca.cnf -extensions v3_ca -out "$1.leaf.crt" 2>/dev/null
    cp "$1.leaf.crt" "$1.crt"
}

root ca
root unrelated-ca

key inter
sign inter ca v3_ca DNS:unused
cp inter.leaf.crt inter.crt

# A SAN no CA should sign, as DER (the config cannot carry CR or LF): a
# GeneralNames SEQUENCE of two dNSNames ([2] IA5String).
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
der_length() { printf '%02x' "$1"; }  # short form: below 128
forged_1='forged.example.com'
forged_2=$(printf 'x\r\n2020/01/01 00:00:00 [emerg] 1#1: forged line "quoted"')
forged_names="82$(der_length ${#forged_1})$(hex "$forged_1")82$(der_length ${#forged_2})$(hex "$forged_2")"
forged_san="DER:30$(der_length $(( ${#forged_names} / 2 )))$forged_names"

for spec in \
    "forged $forged_san" \
    "leaf DNS:abc.example.com,URI:spiffe://abc.example.com/test-identity,DNS:other.example.com" \
    "spiffe URI:spiffe://abc.example.com/test-identity" \
    "wrongsan DNS:wrong.example.com" \
    "wildcard DNS:*.example.com" \
    "ipemail IP:127.0.0.1,email:ops@example.com" \
    "expired DNS:abc.example.com 200101000000Z 200201000000Z" \
    "notyet DNS:abc.example.com 400101000000Z 410101000000Z"
do
    # shellcheck disable=SC2086
    set -- $spec
    name=$1 san=$2
    shift 2
    key "$name"
    sign "$name" inter v3_leaf "$san" "$@"
    cat "$name.leaf.crt" inter.crt > "$name.crt"
done

key untrusted
sign untrusted unrelated-ca v3_leaf DNS:abc.example.com
cp untrusted.leaf.crt untrusted.crt

key selfsigned
export SAN=DNS:abc.example.com CA_NAME=selfsigned
openssl req -x509 -new -key selfsigned.key -subj "/CN=abc.example.com" -days 365 \
    -config ca.cnf -extensions v3_leaf -out selfsigned.leaf.crt 2>/dev/null
cp selfsigned.leaf.crt selfsigned.crt

key twin-ca
export SAN=DNS:unused CA_NAME=twin-ca
openssl req -x509 -new -key twin-ca.key -subj "/CN=ca" -days 3650 \
    -config ca.cnf -extensions v3_ca -out twin-ca.leaf.crt 2>/dev/null
cp twin-ca.leaf.crt twin-ca.crt
key twinsigned
sign twinsigned twin-ca v3_leaf_no_akid DNS:abc.example.com
cp twinsigned.leaf.crt twinsigned.crt

# chain files a client or test may want
cat ca.crt inter.crt > ca-and-inter.crt
