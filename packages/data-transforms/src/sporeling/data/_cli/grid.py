"""`sporeling-data grid SPEC --out grid.png`: a PNG grid of the images a pipeline makes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from sporeling.data.cli import SUCCESS, CliError

PAD = 2  # pixels between cells and around the grid
BACKGROUND = 40


def displayable(value: np.ndarray, column: str) -> np.ndarray:
    """One image as HWC (or HW) uint8: CHW is transposed; floats in [0, 1] are scaled by
    255, floats in [0, 255] kept, anything else (e.g. normalized) min-max stretched."""
    a = np.asarray(value)
    if a.ndim == 3 and a.shape[-1] not in (1, 3, 4) and a.shape[0] in (1, 3, 4):
        a = a.transpose(1, 2, 0)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[-1] not in (3, 4)):
        raise CliError(
            f"column {column!r} holds values of shape {a.shape}, not images (HW, HWC or CHW); "
            "choose another with --column"
        )
    if a.dtype == np.uint8:
        return a
    f = a.astype(np.float64)
    lo, hi = float(f.min()), float(f.max())
    if lo >= 0 and hi <= 1:
        f = f * 255
    elif lo < 0 or hi > 255:
        f = (f - lo) / (hi - lo if hi > lo else 1.0) * 255
    return np.clip(np.rint(f), 0, 255).astype(np.uint8)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sporeling-data grid",
        description="Save the first ROWS x COLS images a spec's pipeline produces as one PNG "
        "grid (batches are split into their images). Cells keep the images' size when they "
        "all share one; otherwise each is fitted into a CELL x CELL square.",
    )
    parser.add_argument("spec", metavar="SPEC", help="pipeline spec (.yaml, .yml or .json)")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--rows", type=int, help="grid rows (default: spec or 4)")
    parser.add_argument("--cols", type=int, help="grid columns (default: spec or 4)")
    parser.add_argument("--column", help="image column (default: 'image' or the first)")
    parser.add_argument("--cell", type=int, default=128, help="cell size for mixed sizes")
    args = parser.parse_args(argv)

    from PIL import Image

    from sporeling.data._cli.common import epochs, is_batched, open_spec

    ds, spec = open_spec(args.spec)
    settings = spec.get("grid") or {}
    rows = args.rows if args.rows is not None else int(settings.get("rows", 4))
    cols = args.cols if args.cols is not None else int(settings.get("cols", 4))
    if rows < 1 or cols < 1 or args.cell < 1:
        parser.error("--rows, --cols and --cell must be >= 1")
    names = list(ds.get_col_names())
    column = args.column or settings.get("column") or ("image" if "image" in names else names[0])
    if column not in names:
        raise CliError(f"no column {column!r}; the pipeline has {names}")
    index = names.index(column)
    batched = is_batched(spec)
    images: list[np.ndarray] = []
    stream = epochs(ds)
    while len(images) < rows * cols:
        value = next(stream)[index]
        items = list(value) if batched else [value]
        images += [displayable(v, column) for v in items[: rows * cols - len(images)]]
    stream.close()
    sizes = {im.shape[:2] for im in images}
    if len(sizes) == 1:
        ch, cw = sizes.pop()
    else:
        ch = cw = args.cell
    canvas = Image.new(
        "RGB", (cols * cw + (cols + 1) * PAD, rows * ch + (rows + 1) * PAD), (BACKGROUND,) * 3
    )
    for k, im in enumerate(images):
        tile = Image.fromarray(im).convert("RGB")
        if tile.size != (cw, ch):
            tile.thumbnail((cw, ch), Image.Resampling.BILINEAR)
        r, c = divmod(k, cols)
        x = PAD + c * (cw + PAD) + (cw - tile.size[0]) // 2
        y = PAD + r * (ch + PAD) + (ch - tile.size[1]) // 2
        canvas.paste(tile, (x, y))
    canvas.save(args.out, format="PNG")
    print(
        f"wrote {args.out}: {rows} x {cols} images of column {column!r}, "
        f"{canvas.size[0]} x {canvas.size[1]} px"
    )
    return SUCCESS
