"""The reference packages on the text that tunable_tokenizer_bench --tokenizer=F --text=T encodes:
`sentencepiece` for a tokenizer.model, `tokenizers` for a tokenizer.json; the whole file and the same
4 KB prompts (cut at line ends), best of five runs, in MB/s.

    python3 bench/tokenizer_reference.py --tokenizer DIR/tokenizer.model --text FILE
"""
import argparse
import time


def chunks_of(data):
    out, at = [], 0
    while at < len(data):
        end = data.find(b"\n", min(len(data), at + 4096))
        end = len(data) if end < 0 else end + 1
        out.append(data[at:end])
        at = end
    return out


def best_seconds(f, runs=5):
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--text", required=True)
    a = ap.parse_args()
    data = open(a.text, "rb").read()
    # As our encode does: invalid UTF-8 replaced (Python's errors="replace"), then encoded.
    whole = data.decode("utf-8", errors="replace")
    chunks = [c.decode("utf-8", errors="replace") for c in chunks_of(data)]
    if a.tokenizer.endswith(".model"):
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=a.tokenizer)
        enc, name = sp.encode, f"sentencepiece {spm.__version__}"
    else:
        from tokenizers import Tokenizer, __version__
        t = Tokenizer.from_file(a.tokenizer)
        enc, name = (lambda s: t.encode(s, add_special_tokens=False).ids), f"tokenizers {__version__}"
    mb = len(data) / 1e6
    s_whole = best_seconds(lambda: enc(whole))
    s_chunks = best_seconds(lambda: [enc(c) for c in chunks])
    print(f"{name}: whole {s_whole * 1e3:.1f} ms ({mb / s_whole:.2f} MB/s); "
          f"{len(chunks)} prompts {s_chunks * 1e3:.1f} ms ({mb / s_chunks:.2f} MB/s)")


if __name__ == "__main__":
    main()
