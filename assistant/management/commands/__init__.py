"""`manage.py assistant_eval` (the golden-set eval), `import_price_list` (a price file applied
from the shell) and `llm_plan` (vLLM sizing). Entry points outside the layer contract: they may
import any layer of the assistant; nothing imports them."""
