"""vLLM capacity arithmetic: the specs of the models we serve (`model_specs`) and the sizing
plan for one deployment (`plan`; `manage.py llm_plan` prints it). Layer `capacity`, beside
`knowledge`: plain arithmetic that may import only the floor (`language`, `schema`, `models`);
today it imports nothing of the assistant but itself."""
