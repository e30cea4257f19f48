# A deterministic, allocation-heavy Python workload: big lists, dicts and
# strings, byte buffers, json, hashing, sorting, regular expressions and file
# I/O through a temporary file, and random bytes from the kernel.  Prints digests of everything it computed.
import hashlib, json, os, random, re, sys, tempfile, zlib

rng = random.Random(20261122)
out = []

# Lists and dicts of many sizes.
data = [rng.random() for _ in range(200_000)]
data.sort()
out.append(("sorted", hashlib.sha256(repr(data[::997]).encode()).hexdigest()))
table = {f"key{i}": [i * j for j in range(i % 50)] for i in range(20_000)}
out.append(("dict", sum(len(v) for v in table.values())))

# Strings and regular expressions.
text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "epsilon"]) + str(rng.randint(0, 999)) for _ in range(100_000))
words = re.findall(r"[a-z]+(\d+)", text)
out.append(("regex", len(words), sum(int(w) for w in words)))

# Byte buffers large and small, compressed and hashed.
blob = bytearray(rng.getrandbits(8) for _ in range(3_000_000))
for i in range(0, len(blob), 4096):
    blob[i] = (blob[i] + 1) % 256
packed = zlib.compress(bytes(blob), 6)
out.append(("zlib", len(packed), hashlib.md5(zlib.decompress(packed)).hexdigest()))

# JSON round trip.
doc = {"items": [{"id": i, "tags": [str(i % 7)] * (i % 5), "v": i / 3} for i in range(30_000)]}
s = json.dumps(doc, sort_keys=True)
out.append(("json", len(s), hashlib.sha1(json.dumps(json.loads(s), sort_keys=True).encode()).hexdigest()))

# File I/O: write a file in chunks, read it back in one go and in pieces.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "blob.bin")
    with open(path, "wb") as f:
        for i in range(0, len(blob), 1 << 20):
            f.write(blob[i:i + (1 << 20)])
    with open(path, "rb") as f:
        whole = f.read()
    with open(path, "rb", buffering=0) as f:
        pieces = b"".join(iter(lambda: f.read(777_777), b""))
    out.append(("file", len(whole), whole == bytes(blob), pieces == whole))
    fd = os.open(path, os.O_RDONLY)
    buf = bytearray(2_000_000)
    n = os.readv(fd, [memoryview(buf)[:1_000_000], memoryview(buf)[1_000_000:]])
    os.close(fd)
    out.append(("readv", n, hashlib.md5(buf).hexdigest()))

# Random bytes the kernel writes into a large buffer (getrandom): only
# their count and spread are deterministic.
noise = os.urandom(3_000_000)
out.append(("urandom", len(noise), len(set(noise)) == 256, noise.count(0) < 20_000))

for line in out:
    print(*line)
