import './base.css';
import './scorep.css';
import './ranks.css';
import './device.css';
