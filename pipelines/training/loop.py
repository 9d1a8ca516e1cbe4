"""The training loop: a DiT trained with accelerate on the data and objective of a `TrainConfig`.

    result = train(TrainConfig(max_steps=200, output_dir="outputs/quick"))

Runs as one process or under `accelerate launch` with several (each renders or reads its own
share of the batches; all hold the same weights; only the main one writes and shows progress).
Everything is checked before anything is written: the config, the run folder (see `run_folder`),
every data file, the checkpoint a resume continues and what it may change, the memory of a step
and of the final samples, the disk. The folder is locked for the run's life. The outputs (listed
in docs/training.md) are written atomically, the run's `pipeline/` last, so a reader of the folder
sees the finished run or, until then, its newest checkpoint. A run resumed from a checkpoint
continues exactly as if it had never stopped: see docs/training.md, "Reliability".
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from diffusers.optimization import get_scheduler
from diffusers.training_utils import EMAModel
from tqdm.auto import tqdm

from axialrope.models import create_dit
from axialrope.models.axial_dit.inflate import initialize_from

from ..data.scenes import mix_seed
from ..dit.bundled import load_dit
from ..dit.default_extrapolation import carried_default_extrapolation
from ..dit.pipeline import AxialDiTPipeline
from ..dit.runs import PIPELINE, PIPELINE_CONFIG, pipeline_from_config, write_pipeline_config
from ..evaluation.run_calibration import prepare
from ..memory import check_sampling_memory, check_training_memory
from ..objectives import draw_noise, drop_labels, make_objective, sample, training_loss
from ..paths import check_free_space, publish, remove_tree, write_atomically
from .checkpoints import latest_checkpoint, save_checkpoint
from .config import TrainConfig
from .data_record import check_resume_data, with_absolute_data_dir, write_data_record
from .loaders import build_dataset, build_loader
from .outputs import LossLog, plot_loss, save_sample_grid
from .resume import (
    checkpoint_components,
    describe_changes,
    find_resume_point,
    restore,
    resume_changes,
    trainer_counters,
)
from .run_folder import RunFolderError, RunLock, check_run_start, clear_run, remove_temporaries
from .tracking import accelerator_kwargs, finish_trackers, log_images, log_scalars, start_trackers, trackers_for
from .validation import check_validation_memory, validate


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stopped before applying that step."""


@dataclass
class TrainResult:
    output_dir: Path
    steps: int  # optimizer steps of the whole run (including those before a resume)
    final_loss: float  # mean loss of the last logged window
    seconds: float  # wall time of this invocation
    model: torch.nn.Module  # the trained (non-EMA) weights, unwrapped
    is_main_process: bool  # False on the other processes of a multi-process run
    start_step: int = 0  # the step this invocation resumed from (0: a fresh run)
    total_seconds: float = 0.0  # the run's wall time over its invocations, up to its checkpoints and this one

    @property
    def invocation_steps(self) -> int:
        """Optimizer steps this invocation trained."""
        return self.steps - self.start_step


def build_model(config: TrainConfig, num_classes: int | None) -> torch.nn.Module:
    """The DiT a config asks for, sized for its first bucket; class-conditional when the data has classes."""
    bucket = config.buckets[0]
    return create_dit(
        config.model_size,
        in_channels=3,
        sample_size=(bucket.height, bucket.width),
        num_frames=bucket.frames,
        patch_size=config.patch_size,
        temporal_patch_size=config.temporal_patch_size,
        num_classes=num_classes if (config.class_conditional and num_classes) else 0,
        position_encoding=config.position_encoding,
        rope_theta=float(config.rope_theta[0]) if len(config.rope_theta) == 1 else tuple(map(float, config.rope_theta)),
        frame_noise_correlation=config.frame_noise_correlation,
    )


def _initialize(model: torch.nn.Module, init_from: str, accelerator: Accelerator) -> None:
    """Overwrite the new model's weights with those of model `init_from` (inflated image -> video)."""

    counts = Counter(initialize_from(load_dit(init_from), model).values())
    accelerator.print(f"initialised from {init_from}: " + ", ".join(f"{n} tensors {a}" for a, n in counts.items()))


def _optimization(config: TrainConfig, model: torch.nn.Module, num_processes: int):
    """AdamW, its warmup schedule (diffusers `get_scheduler`) and the EMA of the weights (None if disabled)."""
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=config.learning_rate,
        betas=(config.adam_beta1, config.adam_beta2),
        weight_decay=config.weight_decay,
    )
    # Once prepared, the scheduler steps once per process per optimizer step, hence the factors.
    lr_scheduler = get_scheduler(
        config.lr_scheduler,
        optimizer,
        num_warmup_steps=config.lr_warmup_steps * num_processes,
        num_training_steps=config.max_steps * num_processes,
    )
    ema = None
    if config.ema_decay > 0:
        ema = EMAModel(
            model.parameters(),
            decay=config.ema_decay,
            use_ema_warmup=True,
            model_cls=type(model),
            model_config=model.config,
        )
    return optimizer, lr_scheduler, ema


def _endless_batches(loader, sampler, epoch: int, skip: int):
    """Batches across epochs, starting `skip` batches into `epoch` (where a resumed run left off)."""
    while True:
        sampler.set_epoch(epoch, start=skip)
        yield from loader
        epoch, skip = epoch + 1, 0


def _stop_if_not_finite(loss: torch.Tensor, accelerator: Accelerator, step: int, checkpoints: Path) -> None:
    """Raise NonFiniteLossError on every process if any process's loss is NaN or infinite."""
    bad = accelerator.reduce((~torch.isfinite(loss.detach())).float(), reduction="sum")
    if bad.item() > 0:
        raise NonFiniteLossError(
            f"training stopped: the loss is {loss.item()} at step {step + 1}; nothing of that step was applied and "
            f"{_last_good(checkpoints)}. Resume with --resume latest after lowering learning_rate or raising "
            "max_grad_norm clipping."
        )


def _stop_if_weights_not_finite(model: torch.nn.Module, step: int, checkpoints: Path) -> None:
    """NonFiniteLossError, before anything of `step` is saved, if a weight is NaN or infinite."""
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise NonFiniteLossError(
            f"training stopped: the weights are no longer finite after step {step}, so they were not saved; "
            f"{_last_good(checkpoints)}. Lower learning_rate (or raise max_grad_norm clipping) and resume with "
            "--resume latest."
        )


def _last_good(checkpoints: Path) -> str:
    last = latest_checkpoint(checkpoints)
    return f"the last good checkpoint is {str(last)!r}" if last else "no checkpoint had been saved yet"


def _final_sample_count(model, config: TrainConfig) -> tuple[int, int]:
    """(samples in the final grid, rows): a row per class (or 4 rows); a video per row, else samples_per_class."""
    num_classes = getattr(model.config, "num_classes", 0) or 0
    rows = num_classes if num_classes else 4
    return (rows if config.buckets[0].frames is not None else rows * config.samples_per_class), rows


@torch.no_grad()
def _final_samples(model, config: TrainConfig, objective, device) -> tuple[torch.Tensor, int]:
    """Samples for the grid and the grid's row length: a row per class (or 4 rows), at the first bucket."""
    bucket = config.buckets[0]
    num_classes = getattr(model.config, "num_classes", 0) or 0
    count, rows = _final_sample_count(model, config)
    labels = torch.arange(rows).repeat_interleave(count // rows).to(device) if num_classes else None
    generator = torch.Generator().manual_seed(config.seed)
    shape = (count, model.config.in_channels, *bucket.size)
    noise = draw_noise(shape, model.config.frame_noise_correlation, generator).to(device)
    guidance = config.guidance_scale if num_classes else 1.0
    model.eval()
    samples = sample(model, objective, noise, labels, config.sample_steps, guidance, model.null_class, generator)
    return samples, count // rows


def _check_memory(model, config: TrainConfig, device) -> None:
    """Before any work: a training step of the largest bucket, and the final sample grid, fit in memory."""
    largest = max(config.buckets, key=lambda b: math.prod(b.size))
    check_training_memory(model, config.batch_size, largest.size, device)
    count, _ = _final_sample_count(model, config)
    guidance = bool(model.config.num_classes) and config.guidance_scale != 1.0
    check_sampling_memory(
        model,
        count,
        config.buckets[0].size,
        guidance,
        device,
        "samples_per_class (the final grid)",
        steps=config.sample_steps,
    )
    check_validation_memory(model, config, device)


def _check_disk(model, config: TrainConfig, output: Path) -> None:
    """Before any work: room on the disk for a checkpoint (two while the oldest is pruned) and the final models."""
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    checkpoint = weights * (4 if config.ema_decay > 0 else 3)  # weights, Adam's two moments, EMA
    finals = weights * (3 if config.ema_decay > 0 else 2)  # model/, model_ema/, pipeline/
    copies = 1 if config.checkpoints_total_limit is None else 2
    check_free_space(output, copies * checkpoint + finals, "output_dir", "a checkpoint and the final models")


def _write_pipeline_config(model, dataset, objective, output: Path) -> None:
    """Main process: the run's pipeline without weights (pipeline-config/), so that every checkpoint and
    the final weights load as a pipeline with the data's class names and the objective's scheduler."""
    class_names = getattr(dataset, "class_names", None) if model.config.num_classes else None
    kept = carried_default_extrapolation(output / PIPELINE_CONFIG)  # a resumed run keeps its calibration
    pipe = AxialDiTPipeline(model, objective.scheduler(), class_names, objective.name, kept)
    publish(
        _staged(output / PIPELINE_CONFIG, lambda temporary: write_pipeline_config(pipe, temporary)),
        output / PIPELINE_CONFIG,
    )


def _staged(folder: Path, save: Callable[[Path], None]) -> Path:
    """`save(temporary)` into `<folder>.tmp` (cleared first); returns it, to be published."""
    temporary = folder.with_name(folder.name + ".tmp")
    remove_tree(temporary)
    save(temporary)
    return temporary


def _write_final_outputs(accelerator, model, ema, config: TrainConfig, objective, output: Path) -> None:
    """Main process: model/ and model_ema/ (save_pretrained), the sample grid and the loss plot, then the run's
    pipeline/ of the EMA weights (raw without EMA), last: until it appears, the folder serves the newest
    checkpoint, which holds the same weights. Everything is written aside first, and published only once the
    samples are known to be finite (NonFiniteLossError if not)."""
    model = accelerator.unwrap_model(model)
    staged = {"model": _staged(output / "model", lambda temporary: model.save_pretrained(str(temporary)))}
    if ema is not None:
        ema.store(model.parameters())
        ema.copy_to(model.parameters())
        staged["model_ema"] = _staged(output / "model_ema", lambda temporary: model.save_pretrained(str(temporary)))
    pipeline = _staged(
        output / PIPELINE,
        lambda temporary: pipeline_from_config(output / PIPELINE_CONFIG, model).save_pretrained(str(temporary)),
    )
    samples, per_row = _final_samples(model, config, objective, accelerator.device)
    if ema is not None:
        ema.restore(model.parameters())
    model.train()
    if not torch.isfinite(samples).all():
        for folder in (*staged.values(), pipeline):
            remove_tree(folder)
        raise NonFiniteLossError(
            f"the final samples of the run are not finite (NaN or infinite), so no final model was written; the "
            f"checkpoints are kept. The weights diverged: lower learning_rate ({config.learning_rate:g}) or raise "
            "max_grad_norm clipping, and train again from an earlier checkpoint."
        )
    for name, folder in staged.items():
        publish(folder, output / name)
    write_atomically(output / "samples.png", lambda temporary: save_sample_grid(samples, temporary, per_row))
    write_atomically(output / "loss.png", lambda temporary: plot_loss(output / "loss.jsonl", temporary))
    publish(pipeline, output / PIPELINE)


def _clip_and_measure(accelerator: Accelerator, model, max_grad_norm: float, measure: bool) -> torch.Tensor | None:
    """Clip the gradients to `max_grad_norm` (0: no clipping); their total norm before clipping, or None when
    neither clipping nor `measure` asks for it. Without clipping the gradients are left as they are."""
    if max_grad_norm > 0:
        return accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)
    if not measure:
        return None
    accelerator.unscale_gradients()  # fp16: the norm of the true gradients, as clipping measures it
    grads = [p.grad.detach() for p in model.parameters() if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))


def _all_agree(accelerator: Accelerator, ok: bool) -> bool:
    """Whether `ok` holds on every process (a collective: every process must call it)."""
    if accelerator.num_processes == 1:
        return ok
    flags = accelerator.gather(torch.tensor([1.0 if ok else 0.0], device=accelerator.device))
    return bool(flags.min() > 0)


def train(config: TrainConfig, on_checkpoint: Callable[[int, Path], None] | None = None) -> TrainResult:
    """Train a DiT as `config` says; see docs/training.md for what is written where.

    Args:
        config: the run; everything is checked (folders scanned, the resume verified) before anything is written.
        on_checkpoint: called on every process after each checkpoint with (step, folder).

    Returns:
        TrainResult. Raises ValueError (RunFolderError, DamagedCheckpointError, ...) for what is found before
        any work; NonFiniteLossError if the loss or the weights stop being finite; CheckpointWriteError (or
        OSError) if an output cannot be written.
    """
    started = time.perf_counter()
    config = with_absolute_data_dir(config.validate())  # recorded absolute: a resume from elsewhere finds it
    check_run_start(config)  # a folder holding another run: refused before the data is read
    dataset = build_dataset(config)  # reads every file: bad data fails here

    on_cpu = not torch.accelerator.is_available() or os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true")
    if config.mixed_precision == "fp16" and on_cpu:  # accelerate would silently train in float32: say so instead
        raise ValueError("mixed_precision fp16 needs a GPU; on a CPU use bf16 or no")
    output = Path(config.output_dir)
    accelerator = Accelerator(
        mixed_precision=config.mixed_precision,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        **accelerator_kwargs(trackers_for(config.report_to), output),
    )
    loader, sampler = build_loader(config, dataset, accelerator.num_processes, accelerator.process_index)
    lock, refused = RunLock(output, report=accelerator.print), None
    if accelerator.is_main_process:
        try:
            lock.__enter__()
        except RunFolderError as error:
            refused = error
    if not _all_agree(accelerator, refused is None):
        raise refused or RunFolderError(f"output_dir {str(output)!r}: the main process could not lock it")
    try:
        return _train_locked(config, accelerator, dataset, loader, sampler, started, on_checkpoint)
    except BaseException:
        finish_trackers(accelerator)  # what they hold so far reaches their files
        if accelerator.is_main_process:  # stopped mid-write (Ctrl-C, SIGTERM, an error): nothing half-made stays
            remove_temporaries(output)
        raise
    finally:
        if accelerator.is_main_process:
            lock.__exit__(None, None, None)


@dataclass
class _Run:
    """What the loop works with, fixed for this invocation: the prepared model and its optimisation, the
    objective, the batch sampler (its length goes into checkpoints), where the run writes, and its clock."""

    config: TrainConfig
    accelerator: Accelerator
    model: torch.nn.Module  # as accelerate prepared it (wrapped under several processes)
    unwrapped: torch.nn.Module
    optimizer: torch.optim.Optimizer
    lr_scheduler: object
    ema: EMAModel | None
    objective: object
    sampler: object
    loss_log: LossLog | None  # the main process's; None on the others
    on_checkpoint: Callable[[int, Path], None] | None
    started: float  # time.perf_counter() at this invocation's start
    seconds_before: float  # wall time of the run's earlier invocations, up to the checkpoint resumed

    @property
    def output(self) -> Path:
        return Path(self.config.output_dir)

    @property
    def checkpoints(self) -> Path:
        return self.output / "checkpoints"

    def seconds(self) -> float:
        """The run's wall time so far, over its invocations."""
        return self.seconds_before + time.perf_counter() - self.started


@dataclass
class _Progress:
    """Where the run stands: what the loop advances, and what checkpoints, logs and the result read."""

    step: int  # optimizer steps of the whole run
    micro: int  # micro-batches drawn over the whole run (each seeds its noise)
    saved_step: int | None  # the step of the newest checkpoint (None: none yet)
    mean_loss: float = math.nan  # mean loss of the last logged window
    window: list[torch.Tensor] = field(default_factory=list)  # losses since the last log
    norms: list[torch.Tensor] = field(default_factory=list)  # gradient norms since the last log (with trackers)


def _train_locked(config, accelerator, dataset, loader, sampler, started, on_checkpoint) -> TrainResult:
    """`train` once the run folder is locked: the checks that read it, then the writes, the loop, the outputs."""
    checkpoints = Path(config.output_dir) / "checkpoints"
    check_run_start(config)  # again, under the lock: another run may have written meanwhile
    resumed = find_resume_point(config.resume, checkpoints, accelerator)  # verified before anything is built
    if resumed is not None:
        check_resume_data(resumed, config, dataset, accelerator.print)  # other files than the run's: refused
        changes = resume_changes(resumed.trainer["config"], config, resumed.folder.name)
    set_seed(config.seed)  # identical initial weights on every process
    model = build_model(config, dataset.num_classes)
    _check_memory(model, config, accelerator.device)
    if config.init_from is not None and resumed is None:  # before the EMA copies the weights
        _initialize(model, config.init_from, accelerator)  # (a resumed run loads its checkpoint's instead)
    optimizer, lr_scheduler, ema = _optimization(config, model, accelerator.num_processes)
    model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)
    if ema is not None:
        ema.to(accelerator.device)
    unwrapped = accelerator.unwrap_model(model)

    progress, seconds_before, (epoch, skip) = _Progress(step=0, micro=0, saved_step=None), 0.0, (0, 0)
    if resumed is not None:
        trainer = restore(resumed, accelerator, unwrapped, optimizer, lr_scheduler, ema)
        progress = _Progress(step=resumed.step, micro=trainer["micro_batches"], saved_step=resumed.step)
        seconds_before = float(trainer["seconds"])
        epoch, skip = trainer["data"]["epoch"], trainer["data"]["batches_into_epoch"]
        accelerator.print(f"resuming from {resumed.folder} at step {progress.step}")
        accelerator.print(describe_changes(changes))
    elif config.resume == "latest":
        accelerator.print(f"resume latest: no checkpoint in {checkpoints} yet, starting from step 0")
    start_step = progress.step
    objective = make_objective(config.objective, config.timestep_sampling)
    loss_log = _first_writes(accelerator, config, unwrapped, dataset, objective, resumed is not None, start_step)
    start_trackers(accelerator, config, Path(config.output_dir), start_step)
    run = _Run(
        config=config,
        accelerator=accelerator,
        model=model,
        unwrapped=unwrapped,
        optimizer=optimizer,
        lr_scheduler=lr_scheduler,
        ema=ema,
        objective=objective,
        sampler=sampler,
        loss_log=loss_log,
        on_checkpoint=on_checkpoint,
        started=started,
        seconds_before=seconds_before,
    )

    batches = _endless_batches(loader, sampler, epoch, skip)
    bar = tqdm(total=config.max_steps, initial=start_step, desc="train", disable=not accelerator.is_main_process)
    model.train()
    try:
        _steps(run, progress, batches, bar)
    finally:
        bar.close()  # ends its line, so that an error's line starts on its own
    _finish(run, progress.step)
    is_main = accelerator.is_main_process
    accelerator.end_training()
    return TrainResult(
        run.output,
        progress.step,
        progress.mean_loss,
        time.perf_counter() - started,
        unwrapped,
        is_main,
        start_step=start_step,
        total_seconds=run.seconds(),
    )


def _first_writes(accelerator, config, unwrapped, dataset, objective, resumed: bool, step: int) -> LossLog | None:
    """The run's first writes, once every check has passed (an overwritten run is cleared, the disk checked
    first): config.yaml, data.json, the loss log continued from `step`, pipeline-config/. Returns the loss log on
    the main process (the only one that writes), None on the others."""
    output = Path(config.output_dir)
    refused = None
    if accelerator.is_main_process:
        if config.overwrite_output_dir:
            cleared = clear_run(output)
            if cleared:
                accelerator.print(f"overwrite_output_dir: deleted the previous run's {', '.join(cleared)}")
        try:
            _check_disk(unwrapped, config, output)
        except ValueError as error:
            refused = error
    if not _all_agree(accelerator, refused is None):
        raise refused or ValueError(f"output_dir {str(output)!r}: the main process found no room on its disk")
    if not accelerator.is_main_process:
        return None
    if resumed:  # the finished run's pipeline/ is out of date now: the newest checkpoint serves
        remove_tree(output / "pipeline")
    config.save(output / "config.yaml")
    write_data_record(output, dataset)
    loss_log = LossLog(output / "loss.jsonl", resume_step=step, report=accelerator.print)
    _write_pipeline_config(unwrapped, dataset, objective, output)
    return loss_log


def _steps(run: _Run, progress: _Progress, batches, bar) -> None:
    """Optimizer steps until max_steps, each logged, validated and checkpointed when the config says; the run
    ends on a checkpoint, so that it can be continued."""
    config, accelerator, model = run.config, run.accelerator, run.model
    null_class = run.unwrapped.null_class
    tracked = bool(accelerator.trackers)  # the main process's, when --report-to names any
    generator = torch.Generator(device=accelerator.device)
    while progress.step < config.max_steps:
        batch = next(batches)
        # each micro-batch's noise from its own seed: a resumed run draws what the stopped one would have
        generator.manual_seed(
            mix_seed(config.seed, progress.micro * accelerator.num_processes + accelerator.process_index)
        )
        progress.micro += 1
        x0 = batch["pixel_values"].to(accelerator.device)
        labels = batch.get("class_labels") if null_class is not None else None
        if labels is not None:
            labels = drop_labels(labels.to(accelerator.device), config.label_dropout, null_class, generator)
        with accelerator.accumulate(model):
            loss = training_loss(model, run.objective, x0, labels, generator, config.frame_noise_correlation)
            _stop_if_not_finite(loss, accelerator, progress.step, run.checkpoints)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                norm = _clip_and_measure(accelerator, model, config.max_grad_norm, tracked)
                progress.norms += [norm.detach()] if tracked else []
            run.optimizer.step()
            run.lr_scheduler.step()
            run.optimizer.zero_grad(set_to_none=True)
        progress.window.append(loss.detach())
        if not accelerator.sync_gradients:
            continue

        progress.step += 1
        if run.ema is not None:
            run.ema.step(run.unwrapped.parameters())
        bar.update(1)
        if progress.step % config.log_every == 0 or progress.step == config.max_steps:
            _log(run, progress, bar)
        if config.validation_steps and progress.step % config.validation_steps == 0:
            _sample_validation(
                run, progress.step
            )  # before the checkpoint: a run stopped in between samples this step again
        if progress.step % config.checkpointing_steps == 0:
            _checkpoint(run, progress)
    if progress.saved_step != progress.step:
        _checkpoint(run, progress)


def _log(run: _Run, progress: _Progress, bar) -> None:
    """The mean loss of the window since the last log (over the processes), the learning rate and the mean
    gradient norm: into loss.jsonl, the progress bar and the trackers."""
    accelerator = run.accelerator
    progress.mean_loss = accelerator.reduce(torch.stack(progress.window).mean(), reduction="mean").item()
    progress.window = []
    bar.set_postfix(loss=f"{progress.mean_loss:.4f}")
    lr = run.lr_scheduler.get_last_lr()[0]
    if accelerator.is_main_process:
        run.loss_log.write(progress.step, progress.mean_loss, lr, run.seconds())
    scalars = {"loss": progress.mean_loss, "lr": lr}
    if progress.norms:  # the mean over the steps since the last log, as the loss
        scalars["grad_norm"], progress.norms = torch.stack(progress.norms).mean().item(), []
    log_scalars(accelerator, progress.step, **scalars)


def _sample_validation(run: _Run, step: int) -> None:
    """The main process samples the validation images of `step` (the others wait for it at the next step's
    collectives); NonFiniteLossError if the samples are not finite."""
    if not run.accelerator.is_main_process:
        return
    try:
        images = validate(run.unwrapped, run.ema, run.config, run.output, step, run.accelerator.device)
    except ValueError as error:  # the pipeline's samples were not finite
        raise NonFiniteLossError(f"validation at step {step}: {error}") from None
    log_images(run.accelerator, step, images)


def _checkpoint(run: _Run, progress: _Progress) -> None:
    """Save the checkpoint of the step reached (every process takes part, the main one writes), then call
    `on_checkpoint` with (step, folder)."""
    accelerator, step = run.accelerator, progress.step
    _stop_if_weights_not_finite(run.unwrapped, step, run.checkpoints)
    trainer = trainer_counters(accelerator, progress.micro, len(run.sampler), run.seconds(), run.config)
    main = accelerator.is_main_process
    components = checkpoint_components(run.unwrapped, run.optimizer, run.lr_scheduler, run.ema) if main else {}
    folder = save_checkpoint(
        accelerator, run.checkpoints, step, components, trainer, run.config.checkpoints_total_limit
    )
    progress.saved_step = step
    if run.on_checkpoint is not None:
        run.on_checkpoint(step, folder)


def _finish(run: _Run, step: int) -> None:
    """After the last step: the main process writes the final outputs, then (calibrate_scales) the run's own
    default extrapolation, measured on its data; every process waits for it."""
    accelerator = run.accelerator
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        _stop_if_weights_not_finite(run.unwrapped, step, run.checkpoints)
        _write_final_outputs(accelerator, run.model, run.ema, run.config, run.objective, run.output)
    if run.config.calibrate_scales and accelerator.is_main_process:  # the run's own default, measured on its data
        prepare(run.output, run.config.data_dir, run.config.calibrate_scales, report=accelerator.print).run()
    accelerator.wait_for_everyone()
