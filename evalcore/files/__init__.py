"""Files a run becomes: figure files, standard IR formats, and run files that travel between machines."""
