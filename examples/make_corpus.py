"""Write a deterministic ~500 KB corpus of 87 fairy tales for the GPT example.

The paper trained a character-level GPT on 500 KB of fairy tales. Nothing is downloaded at run
time here: the tales are composed from a fixed vocabulary with a seeded generator, so every
machine gets the same bytes.

    python examples/make_corpus.py [path]      (default: examples/data/fairy_tales.txt)
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

TALES = 87
TARGET_BYTES = 500_000
DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "fairy_tales.txt"

HEROES = [
    "a miller's daughter",
    "the youngest prince",
    "a poor shoemaker",
    "a clever tailor",
    "a shepherd boy",
    "the king's huntsman",
    "a little girl in a red cap",
    "a brave soldier",
    "the goose girl",
    "a fisherman",
    "twelve brothers",
    "a woodcutter's son",
]
FOES = [
    "a wicked witch",
    "a greedy giant",
    "a sly wolf",
    "an enchanted frog",
    "a cruel stepmother",
    "a dragon with seven heads",
    "a dwarf who spun straw",
    "a sorcerer of the mountain",
]
PLACES = [
    "in the dark forest",
    "beyond the glass mountain",
    "by the deep well",
    "in a castle of iron",
    "at the edge of the kingdom",
    "under the old linden tree",
    "in a village by the river",
    "on the road to the city",
]
GIFTS = [
    "a golden key",
    "a magic table",
    "a cloak that made him unseen",
    "three hairs of gold",
    "a singing bird",
    "a ring of silver",
    "a bottle of water of life",
    "seven-league boots",
]
DEEDS = [
    "spun the flax into gold",
    "answered the three riddles",
    "climbed the tower at night",
    "shared his last crust of bread",
    "kept silent for seven years",
    "found the hidden door",
    "carried the old woman across the river",
    "outwitted the guards at the gate",
]
ENDINGS = [
    "and they lived happily ever after",
    "and the wedding lasted nine days",
    "and if they have not died, they are living still",
    "and the whole kingdom rejoiced",
    "and never again did anyone go hungry there",
]


def tale(rng: random.Random, number: int) -> str:
    hero, foe, place = rng.choice(HEROES), rng.choice(FOES), rng.choice(PLACES)
    title = rng.choice(GIFTS).split(" ", 1)[1].upper()
    lines = [f"TALE {number}. THE {title}", ""]
    lines.append(f"Once upon a time there lived {hero} {place}.")
    for _ in range(rng.randint(38, 52)):
        lines.append(
            rng.choice(
                [
                    f'One day {hero} met {foe}, who said: "Give me {rng.choice(GIFTS)}, or you shall suffer."',
                    f"But {hero} {rng.choice(DEEDS)}, and so the spell was broken {rng.choice(PLACES)}.",
                    f"Then {foe} grew angry and went {rng.choice(PLACES)} to wait.",
                    f'An old woman gave {hero} {rng.choice(GIFTS)} and said: "Use it when the need is greatest."',
                    f"For {rng.randint(2, 12)} days and nights {hero} walked {rng.choice(PLACES)}.",
                    f"When the moon rose, {hero} {rng.choice(DEEDS)}.",
                ]
            )
        )
    lines.append(f"At last {foe} was driven away, {rng.choice(ENDINGS)}.")
    return "\n".join(lines) + "\n\n"


def make_corpus(path: str | Path = DEFAULT_PATH) -> Path:
    path = Path(path)
    rng = random.Random(2021)
    tales = [tale(rng, i + 1) for i in range(TALES)]
    text = "".join(tales)
    # Grow each tale evenly until the corpus reaches its size.
    while len(text.encode()) < TARGET_BYTES:
        i = rng.randrange(TALES)
        tales[i] = tales[i].rstrip("\n") + "\n" + tale(rng, i + 1).split("\n", 2)[2]
        text = "".join(tales)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


if __name__ == "__main__":
    out = make_corpus(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PATH)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
