"""What a student handed in, read as module sources: a folder, a .zip, a .py or a .ipynb
(loader.py, notebook.py), and the salvage of modules that do not import as written."""
