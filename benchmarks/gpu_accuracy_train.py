"""Train a torchvision ResNet-50 (1000-way head, as models/resnet50.yaml) on scikit-learn's digits upscaled to
224x224, on the GPU, in seconds; lay the digits out as a class-folder data set of PNG files; save the state_dict.

It trains on every image except the ones edgebench will evaluate (the same seeded split edgebench uses:
edgebench.models.labelled), and prints its own fp32 top-1 on those evaluated images, computed here in plain torch,
so the rows' torch/ort fp32 top-1 can be checked against an independent number.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from PIL import Image
from sklearn.datasets import load_digits

from edgebench.models.labelled import load_labelled
from edgebench.models.spec import load_model_spec
from edgebench.models.weights import preprocess_for


def write_images(folder: Path) -> None:
    digits = load_digits()
    for i, (img, label) in enumerate(zip(digits.images, digits.target)):
        d = folder / str(int(label))
        d.mkdir(parents=True, exist_ok=True)
        big = np.kron(np.round(img * (255.0 / 16.0)).astype(np.uint8), np.ones((28, 28), dtype=np.uint8))
        Image.fromarray(big, mode="L").save(d / f"{i:04d}.png")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--eval", type=int, default=500, help="images edgebench evaluates (--accuracy-samples)")
    ap.add_argument("--calib", type=int, default=128, help="calibration images (--calibration-samples)")
    ap.add_argument("--seed", type=int, default=0, help="calibration.seed of the profile (the split's seed)")
    ap.add_argument("--epochs", type=int, default=8)
    args = ap.parse_args()
    out = Path(args.out)
    folder = out / "digits"
    t0 = time.time()
    if not folder.is_dir():
        write_images(folder)
    ds = load_labelled(folder)
    evaluated, calib = ds.split(args.eval, args.calib, args.seed)
    train = sorted(set(range(len(ds))) - set(evaluated))
    spec = load_model_spec("resnet50")
    pre = preprocess_for(spec)  # what edgebench applies to these images for this spec (resize, ImageNet mean/std)
    x_train = torch.from_numpy(ds.load(train, pre))
    y_train = torch.tensor([ds.labels[i] for i in train])
    x_eval = torch.from_numpy(ds.load(evaluated, pre))
    y_eval = torch.tensor([ds.labels[i] for i in evaluated])
    print(f"data: {len(ds)} images in {folder}, train {len(train)}, evaluated {len(evaluated)}, "
          f"calibration {len(calib)} (inside train), {time.time() - t0:.1f} s", flush=True)

    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None, num_classes=spec.num_classes).to(dev)
    model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    steps = args.epochs * ((len(train) + 63) // 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    xg, yg = x_train.to(dev), y_train.to(dev)
    t1 = time.time()
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for idx in torch.randperm(len(xg), device=dev).split(64):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(xg[idx].contiguous(memory_format=torch.channels_last)),
                                                         yg[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * len(idx)
        print(f"epoch {epoch + 1}/{args.epochs}: train loss {total / len(xg):.4f}", flush=True)
    train_s = time.time() - t1
    model.eval()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        logits = torch.cat([model(x_eval[i:i + 100].to(dev)).float().cpu() for i in range(0, len(x_eval), 100)])
    top1 = float((logits.argmax(1) == y_eval).float().mean() * 100)
    top5 = float((logits.topk(5, 1).indices == y_eval[:, None]).any(1).float().mean() * 100)
    weights = out / "resnet50_digits.pt"
    torch.save(model.cpu().state_dict(), weights)
    summary = {"weights": str(weights), "dataset": str(folder), "train_images": len(train),
               "evaluated_images": len(evaluated), "calibration_images": len(calib), "epochs": args.epochs,
               "train_s": round(train_s, 1), "independent_fp32_top1_pct": top1, "independent_fp32_top5_pct": top5,
               "gpu": torch.cuda.get_device_name(0)}
    (out / "train.json").write_text(json.dumps(summary, indent=1))
    print(f"trained in {train_s:.1f} s on {summary['gpu']}; independent plain-torch fp32 (TF32 off) on the "
          f"evaluated images: top-1 {top1:.2f}%, top-5 {top5:.2f}%", flush=True)


if __name__ == "__main__":
    main()
