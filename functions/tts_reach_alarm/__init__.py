"""TTS-reach responder: finds sessions whose agent responded but never produced audio, decides
whether they concentrate on one worker, notifies and hands a suspect worker to the drainer."""
