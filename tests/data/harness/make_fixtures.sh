#!/usr/bin/env bash
# How the committed HELM and Every Eval Ever fixtures under tests/data/harness/ were made, by the tools themselves.
#
# Neither tool installs into the project's environment: crfm-helm pulls torch and CUDA wheels and pins
# datasets~=3.1 and fsspec 2025.3; every-eval-ever needs Python >= 3.12. So each runs here in a scratch venv,
# once, and the tests read what it wrote. lm-evaluation-harness and Inspect AI run at test time instead
# (tests/harness/conftest.py).
#
# Usage: bash tests/data/harness/make_fixtures.sh   (writes tests/data/harness/{helm,eee}; PYTHON311, PYTHON312 name the interpreters)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- HELM 0.5.16: helm-run on HELM's own offline scenarios and its SimpleClient, under two model names ---------------
"${PYTHON311:-python3.11}" -m venv "$work/helm"
"$work/helm/bin/pip" install -q --no-deps crfm-helm==0.5.16
# the run path of these scenarios needs only these of crfm-helm's requirements (not torch, transformers or spacy)
"$work/helm/bin/pip" install -q "cattrs~=22.2" "colorlog~=6.9" "dacite~=1.6" "Mako~=1.2" "numpy<3" "pandas~=2.0" \
  "pyhocon~=0.3.59" "ubelt~=1.3" "retrying~=1.3" "tqdm~=4.64" sqlitedict "bottle~=0.12.23" pyarrow "pyarrow-hotfix~=0.6" \
  "nltk~=3.7" "rouge-score~=0.1.2" scipy "uncertainty-calibration~=0.1.4" scikit-learn zstandard pyyaml filelock requests datasets
mkdir -p "$work/run/prod_env"
cat > "$work/run/prod_env/model_deployments.yaml" <<'EOF'
model_deployments:
  - name: acme/parrot-7b
    model_name: acme/parrot-7b
    tokenizer_name: simple/tokenizer1
    max_sequence_length: 2048
    client_spec:
      class_name: "helm.clients.simple_client.SimpleClient"
EOF
cat > "$work/run/prod_env/model_metadata.yaml" <<'EOF'
models:
  - name: acme/parrot-7b
    display_name: Parrot 7B
    description: HELM's SimpleClient under a second model name.
    creator_organization_name: Acme
    access: open
    release_date: 2024-01-01
    tags: [TEXT_MODEL_TAG, FULL_FUNCTIONALITY_TEXT_MODEL_TAG]
EOF
(cd "$work/run" && "$work/helm/bin/helm-run" \
  --run-entries simple_mcqa:model=simple/model1 simple_mcqa:model=acme/parrot-7b simple_classification:model=simple/model1 \
  --suite agielo --max-eval-instances 4)
rm -rf "$here/helm" && mkdir -p "$here/helm/agielo"
for run in "$work/run/benchmark_output/runs/agielo/"simple*; do
  mkdir -p "$here/helm/agielo/$(basename "$run")"
  cp "$run/run_spec.json" "$run/per_instance_stats.json" "$here/helm/agielo/$(basename "$run")/"
done

# --- Every Eval Ever 0.3.0: its own lm-eval converter on a real lm-eval run (dummy model, the local quiz tasks) -------
"${PYTHON312:-python3.12}" -m venv "$work/eee"
"$work/eee/bin/pip" install -q every-eval-ever==0.3.0
"${PYTHON311:-python3.11}" -m venv "$work/lmeval"
"$work/lmeval/bin/pip" install -q lm-eval==0.4.13
cp "$here/lm_eval_tasks/"* "$work/run/"
for args in "EleutherAI/pythia-160m 1" "acme/parrot-7b 2"; do
  set -- $args
  (cd "$work/run" && HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 HF_HOME="$work/hf" "$work/lmeval/bin/lm_eval" --model dummy \
    --model_args "pretrained=$1" --tasks quiz_mc,quiz_gen --include_path . --limit 6 --log_samples --output_path out --seed "$2")
done
for model_dir in "$work/run/out/"*/; do
  "$work/eee/bin/every_eval_ever" convert lm_eval --log_path "$model_dir" --output_dir "$work/eee_out" --include_samples
done
rm -rf "$here/eee" && mkdir -p "$here/eee"
# keep both tasks of pythia-160m and quiz_mc of parrot-7b: <task>/<developer>/<model>/<uuid>.json + <uuid>_samples.jsonl
(cd "$work/eee_out" && cp --parents quiz_mc/EleutherAI/pythia-160m/* quiz_gen/EleutherAI/pythia-160m/* quiz_mc/acme/parrot-7b/* "$here/eee/")
